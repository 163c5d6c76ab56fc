CREATE TABLE lobbies (
    id          uuid PRIMARY KEY,
    game_type   text NOT NULL,
    stake_minor bigint NOT NULL CHECK (stake_minor >= 0),
    settings    jsonb NOT NULL,
    created_by  uuid NOT NULL REFERENCES users (id),
    created_at  timestamptz NOT NULL
);
CREATE INDEX lobbies_created_idx ON lobbies (created_at DESC);

CREATE TABLE games (
    id          uuid PRIMARY KEY,
    lobby_id    uuid REFERENCES lobbies (id),
    game_type   text NOT NULL,
    stake_minor bigint NOT NULL CHECK (stake_minor >= 0),
    settings    jsonb NOT NULL,
    status      text NOT NULL CHECK (status IN ('waiting', 'active', 'completed', 'cancelled')),
    state       jsonb NOT NULL,
    seq         integer NOT NULL DEFAULT 0,
    deadline    timestamptz,
    winner_id   uuid REFERENCES users (id),
    result      jsonb,
    rematch_of  uuid REFERENCES games (id),
    created_at  timestamptz NOT NULL,
    ended_at    timestamptz
);
-- Timers: any instance claims the active games whose deadline passed.
CREATE INDEX games_deadline_idx ON games (deadline) WHERE status = 'active';
CREATE INDEX games_status_idx ON games (status, created_at DESC);

CREATE TABLE game_players (
    game_id uuid NOT NULL REFERENCES games (id),
    user_id uuid NOT NULL REFERENCES users (id),
    seat    integer NOT NULL,
    PRIMARY KEY (game_id, user_id)
);
CREATE INDEX game_players_user_idx ON game_players (user_id);

-- Where each user is: in one queue or one active game, never both, never two.
CREATE TABLE user_presence (
    user_id   uuid PRIMARY KEY REFERENCES users (id),
    kind      text NOT NULL CHECK (kind IN ('queue', 'game')),
    lobby_id  uuid REFERENCES lobbies (id),
    game_id   uuid REFERENCES games (id),
    since     timestamptz NOT NULL,
    queue_pos bigserial
);
CREATE INDEX user_presence_queue_idx ON user_presence (lobby_id, queue_pos) WHERE kind = 'queue';

-- The event stream: ordered per game, written in the causing transaction.
CREATE TABLE game_events (
    game_id    uuid NOT NULL REFERENCES games (id),
    seq        integer NOT NULL,
    name       text NOT NULL,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (game_id, seq)
);

-- Spectators watching each game, per server instance (rows of instances
-- that stopped refreshing are ignored).
CREATE TABLE game_viewers (
    game_id     uuid NOT NULL REFERENCES games (id),
    instance_id text NOT NULL,
    viewers     integer NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (game_id, instance_id)
);

CREATE TABLE rematches (
    game_id      uuid NOT NULL REFERENCES games (id),
    user_id      uuid NOT NULL REFERENCES users (id),
    requested_at timestamptz NOT NULL,
    PRIMARY KEY (game_id, user_id)
);

CREATE TABLE challenges (
    id           uuid PRIMARY KEY,
    from_user    uuid NOT NULL REFERENCES users (id),
    to_user      uuid NOT NULL REFERENCES users (id),
    game_type    text NOT NULL,
    stake_minor  bigint NOT NULL CHECK (stake_minor >= 0),
    settings     jsonb NOT NULL,
    status       text NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'expired', 'cancelled')),
    game_id      uuid REFERENCES games (id),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    CHECK (from_user <> to_user)
);
CREATE INDEX challenges_to_idx ON challenges (to_user, status);
