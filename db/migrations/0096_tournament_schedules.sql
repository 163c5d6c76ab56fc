-- Recurring arenas: an admin's schedule creates each occurrence an hour
-- before it starts, as a normal arena that names its schedule.
CREATE TABLE tournament_schedules (
    id               uuid PRIMARY KEY,
    name             text NOT NULL,
    game_type        text NOT NULL,
    settings         jsonb NOT NULL,
    entry_fee_minor  bigint NOT NULL CHECK (entry_fee_minor >= 0),
    prize_split_bps  integer[] NOT NULL,
    duration_minutes integer NOT NULL CHECK (duration_minutes > 0),
    max_players      integer NOT NULL,
    every            text NOT NULL CHECK (every IN ('hourly', 'daily', 'weekly')),
    at               text NOT NULL,
    agents_allowed   boolean NOT NULL,
    created_by       uuid NOT NULL REFERENCES users (id),
    created_at       timestamptz NOT NULL,
    -- The start of the next occurrence not created yet.
    next_at          timestamptz NOT NULL,
    stopped_at       timestamptz
);
CREATE INDEX tournament_schedules_due_idx ON tournament_schedules (next_at) WHERE stopped_at IS NULL;

ALTER TABLE tournaments ADD COLUMN schedule_id uuid REFERENCES tournament_schedules (id);
-- One occurrence per start: instances that create it at once create it once.
CREATE UNIQUE INDEX tournaments_schedule_start_idx ON tournaments (schedule_id, starts_at) WHERE schedule_id IS NOT NULL;
