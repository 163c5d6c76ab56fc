-- Who holds a socket in which live room, per instance, as each instance
-- shares it every second (its rows count only while its presence row is fresh,
-- and go with it): an arena pairs only entrants in its room or in the room of
-- their last game there. Unlogged, like online_users: it is rebuilt from
-- the sockets within a second after a crash.
CREATE UNLOGGED TABLE room_members (
    instance_id text NOT NULL REFERENCES instance_presence (instance_id) ON DELETE CASCADE,
    room_id     uuid NOT NULL,
    user_id     uuid NOT NULL,
    PRIMARY KEY (user_id, room_id, instance_id)
);
CREATE INDEX room_members_instance_idx ON room_members (instance_id);

-- The entrant's last game in the arena, kept after it ends: its players
-- wait for their next game on its page.
ALTER TABLE tournament_players ADD COLUMN last_game uuid;
