-- Abuse controls: rolling-window request counters, one row per caller,
-- endpoint and fixed window. The rolling count interpolates the previous
-- window's row. Unlogged: counters are cheap to lose in a crash (they only
-- restart at zero) and skipping the WAL halves the cost of each request's
-- upsert.
CREATE UNLOGGED TABLE abuse_counters (
    caller       text NOT NULL,
    endpoint     text NOT NULL,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL,
    PRIMARY KEY (caller, endpoint, window_start)
);
CREATE INDEX abuse_counters_window_idx ON abuse_counters (window_start);

-- x402 payments that satisfy a 402 challenge: settled on chain to the vault
-- (the ledger credits the treasury under the same signature) and good for
-- one request of the resource they were made for.
CREATE TABLE x402_payments (
    signature    text PRIMARY KEY,
    resource     text NOT NULL,
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    payer        text NOT NULL,
    user_id      uuid REFERENCES users (id),
    intent_id    uuid UNIQUE REFERENCES intents (id),
    status       text NOT NULL CHECK (status IN ('settling', 'settled')),
    used_at      timestamptz,
    used_by      text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX x402_payments_user_idx ON x402_payments (user_id, created_at DESC);
