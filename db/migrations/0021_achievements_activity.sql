-- An achievement unlocks once per user: the primary key is the guard, so
-- two transactions earning it at once insert it once.
CREATE TABLE user_achievements (
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    achievement_id  text NOT NULL,
    unlocked_at     timestamptz NOT NULL,
    PRIMARY KEY (user_id, achievement_id)
);

-- The public activity feed, read newest first by id.
CREATE TABLE activity (
    id          bigserial PRIMARY KEY,
    type        text NOT NULL,
    actor_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    data        jsonb NOT NULL,
    created_at  timestamptz NOT NULL
);

