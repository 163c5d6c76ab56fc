-- When the platform first sent an intent's transaction, by its clock read
-- under the player's protection lock: money put in is ordered against a
-- time-out or self-exclusion by it.
ALTER TABLE intents ADD COLUMN sent_at timestamptz;
