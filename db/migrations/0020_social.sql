-- Notifications: a user's list is read newest first by id, and the unread
-- ones are counted on every read of it.
CREATE TABLE notifications (
    id          bigserial PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type        text NOT NULL,
    data        jsonb NOT NULL,
    read        boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL
);
CREATE INDEX notifications_user_idx ON notifications (user_id, id DESC);
CREATE INDEX notifications_unread_idx ON notifications (user_id, id DESC) WHERE NOT read;

-- Friendship is mutual: a request waits in friend_requests until the
-- other user accepts, then both directions are rows of friends, so that
-- anyone's list is one index range.
CREATE TABLE friend_requests (
    from_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    to_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (from_id, to_id),
    CHECK (from_id <> to_id)
);
CREATE INDEX friend_requests_to_idx ON friend_requests (to_id, created_at DESC);

CREATE TABLE friends (
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    friend_id   uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    since       timestamptz NOT NULL,
    PRIMARY KEY (user_id, friend_id),
    CHECK (user_id <> friend_id)
);
CREATE INDEX friends_since_idx ON friends (user_id, since DESC, friend_id);

-- Who has a socket open, by instance: an instance writes the changes of
-- its users once a second, and its rows count only while its presence
-- row is fresh (they go with it).
CREATE UNLOGGED TABLE online_users (
    instance_id text NOT NULL REFERENCES instance_presence (instance_id) ON DELETE CASCADE,
    user_id     uuid NOT NULL,
    PRIMARY KEY (user_id, instance_id)
);
CREATE INDEX online_users_instance_idx ON online_users (instance_id);
