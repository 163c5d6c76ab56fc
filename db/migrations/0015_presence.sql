-- A finished game frees its players by game id.
CREATE INDEX user_presence_game_idx ON user_presence (game_id) WHERE game_id IS NOT NULL;

-- Spectator presence, one row per instance: its counts by game id,
-- rewritten every second. Unlogged: presence is worth nothing after a
-- database restart.
DROP TABLE game_viewers;
CREATE UNLOGGED TABLE instance_presence (
    instance_id text PRIMARY KEY,
    counts      jsonb NOT NULL,
    updated_at  timestamptz NOT NULL
);

-- A move rewrites its game's row: room on each page lets the new version
-- stay on it without touching the indexes (a HOT update).
ALTER TABLE games SET (fillfactor = 70);
