-- When the deadline worker of any instance last ran (one row, shared by
-- all instances). A run that finds the previous one more than 10 s ago
-- knows that nothing enforced deadlines meanwhile: the deadlines that
-- passed in between are given their round's or turn's full time again
-- instead of being enforced. NULL: no run yet (a new database, or one from
-- before this table), so every deadline already passed at the first run
-- counts as passed while the platform was down.
CREATE TABLE deadline_worker (
    id     boolean PRIMARY KEY DEFAULT true CHECK (id),
    ran_at timestamptz
);
INSERT INTO deadline_worker (id, ran_at) VALUES (true, NULL);
