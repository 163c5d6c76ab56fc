-- Whether the platform was closed to players (maintenance mode) since the
-- deadline worker last ran: while it is, no deadline is enforced, and the
-- first run after it gives every deadline that passed meanwhile its
-- round's or turn's full time again, as after an outage.
ALTER TABLE deadline_worker ADD COLUMN closed boolean NOT NULL DEFAULT false;
