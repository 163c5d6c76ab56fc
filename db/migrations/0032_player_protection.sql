-- Player protection: the limits a player sets on themselves, their age
-- confirmation, and time-outs and self-exclusions.

-- One row per player who set a limit, a reminder or confirmed their age.
-- A NULL limit is no limit. Limits are in USDC minor units over rolling
-- windows (day 24 hours, week 7 days, month 30 days).
CREATE TABLE player_protection (
    user_id                  uuid PRIMARY KEY REFERENCES users (id),
    deposit_day_minor        bigint CHECK (deposit_day_minor >= 0),
    deposit_week_minor       bigint CHECK (deposit_week_minor >= 0),
    deposit_month_minor      bigint CHECK (deposit_month_minor >= 0),
    loss_day_minor           bigint CHECK (loss_day_minor >= 0),
    loss_week_minor          bigint CHECK (loss_week_minor >= 0),
    loss_month_minor         bigint CHECK (loss_month_minor >= 0),
    stake_max_minor          bigint CHECK (stake_max_minor >= 0),
    session_reminder_minutes integer NOT NULL DEFAULT 60 CHECK (session_reminder_minutes BETWEEN 0 AND 1440),
    -- The birth date the player gave; underage once it was below MIN_AGE,
    -- which no later answer undoes.
    birth_date               date,
    underage                 boolean NOT NULL DEFAULT false,
    age_confirmed_at         timestamptz,
    updated_at               timestamptz NOT NULL
);

-- A looser limit (higher, or removed) waits 24 hours: the change asked for
-- and when it applies. At most one per limit; a tighter change replaces it.
CREATE TABLE player_limit_changes (
    user_id      uuid NOT NULL REFERENCES users (id),
    name         text NOT NULL CHECK (name IN ('depositMinor.day', 'depositMinor.week', 'depositMinor.month',
                     'lossMinor.day', 'lossMinor.week', 'lossMinor.month', 'stakeMaxMinor')),
    value_minor  bigint CHECK (value_minor >= 0), -- NULL: the limit removed
    asked_at     timestamptz NOT NULL,
    effective_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, name)
);

-- Time-outs and self-exclusions, one row each as it was asked for. The
-- running one is the one that ends last (until NULL: never). A longer one
-- is a new row; none is ever changed or removed, by anyone.
CREATE TABLE exclusions (
    id        bigserial PRIMARY KEY,
    user_id   uuid NOT NULL REFERENCES users (id),
    kind      text NOT NULL CHECK (kind IN ('timeout', 'self-exclusion')),
    starts_at timestamptz NOT NULL,
    until     timestamptz,
    CHECK (until IS NULL OR until > starts_at),
    CHECK (kind = 'self-exclusion' OR until IS NOT NULL)
);
CREATE INDEX exclusions_user_idx ON exclusions (user_id, starts_at DESC);

CREATE FUNCTION exclusions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'exclusions cannot be changed or lifted: % refused', TG_OP;
END $$;
CREATE TRIGGER exclusions_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON exclusions
    FOR EACH STATEMENT EXECUTE FUNCTION exclusions_immutable();

-- Starting an exclusion cancels the player's open buy orders in every
-- market.
CREATE INDEX market_orders_open_user_idx ON market_orders (user_id) WHERE status = 'open';
