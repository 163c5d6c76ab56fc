-- The demo players are marked, so that people can be offered a game
-- against one and the bots can tell people's tables from their own.
ALTER TABLE users ADD COLUMN bot boolean NOT NULL DEFAULT false;
CREATE INDEX users_bots_idx ON users (id) WHERE bot;
