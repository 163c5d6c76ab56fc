-- A queued game the sequencer cannot build a record of (a bug, a row it
-- cannot read) is held back with the reason, and retried later, instead
-- of holding up every game queued after it.
ALTER TABLE games_log_queue ADD COLUMN held_back_at timestamptz;
ALTER TABLE games_log_queue ADD COLUMN held_back_reason text;
