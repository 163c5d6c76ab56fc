-- Spectator donations into a game's escrow, and the on-chain transfers of
-- settlement (escrow sweeps to the vault, refunds to donors).
CREATE TABLE donations (
    signature    text PRIMARY KEY,
    game_id      uuid NOT NULL REFERENCES games (id),
    donor_id     uuid NOT NULL REFERENCES users (id),
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    created_at   timestamptz NOT NULL
);
CREATE INDEX donations_game_idx ON donations (game_id, created_at DESC);

-- One row per settled game: settlement happens once.
CREATE TABLE settlements (
    game_id    uuid PRIMARY KEY REFERENCES games (id),
    result     jsonb NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE settlement_transfers (
    id           uuid PRIMARY KEY,
    game_id      uuid NOT NULL REFERENCES games (id),
    kind         text NOT NULL CHECK (kind IN ('sweep', 'refund')),
    to_address   text NOT NULL,
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    donation     text REFERENCES donations (signature),
    status       text NOT NULL CHECK (status IN ('pending', 'sent', 'confirmed')),
    signature    text UNIQUE,
    raw          bytea,
    error        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX settlement_transfers_pending_idx ON settlement_transfers (created_at) WHERE status <> 'confirmed';
CREATE INDEX settlement_transfers_game_idx ON settlement_transfers (game_id);
