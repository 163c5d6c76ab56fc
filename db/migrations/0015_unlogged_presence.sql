-- Spectator presence is rewritten every second by every instance and is
-- worth nothing after a database restart: no need to write it to the WAL.
ALTER TABLE game_viewers SET UNLOGGED;
