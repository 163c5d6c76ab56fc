-- A finished game frees its players by game id; instances replace their
-- own spectator counts by instance id.
CREATE INDEX user_presence_game_idx ON user_presence (game_id) WHERE game_id IS NOT NULL;
CREATE INDEX game_viewers_instance_idx ON game_viewers (instance_id);
