-- Integrity: bets and markets of a suspicious game's end held for review,
-- the accounts linked by where they signed in, and a market's outstanding
-- pairs and money paid kept on its row for the caps and the review.

-- A held bet or market is paid only once an admin releases or voids it.
ALTER TABLE bets DROP CONSTRAINT bets_status_check;
ALTER TABLE bets ADD CONSTRAINT bets_status_check CHECK (status IN ('open', 'held', 'won', 'lost', 'refunded'));
ALTER TABLE markets DROP CONSTRAINT markets_status_check;
ALTER TABLE markets ADD CONSTRAINT markets_status_check CHECK (status IN ('open', 'held', 'resolved'));

-- pairs: outstanding pairs of shares (one of each outcome); paid_minor: what
-- buyers paid for shares in the market's trades (a transfer its price, a
-- mint a whole pair).
ALTER TABLE markets ADD COLUMN pairs bigint NOT NULL DEFAULT 0 CHECK (pairs >= 0);
ALTER TABLE markets ADD COLUMN paid_minor bigint NOT NULL DEFAULT 0 CHECK (paid_minor >= 0);
UPDATE markets AS m SET
    pairs = coalesce((SELECT sum(p.shares) FROM market_positions AS p
        WHERE p.game_id = m.game_id AND p.outcome_id = m.outcomes[1]), 0),
    paid_minor = coalesce((SELECT sum(CASE t.kind WHEN 'transfer' THEN t.price_minor * t.shares
        WHEN 'mint' THEN 1000000 * t.shares ELSE 0 END) FROM market_trades AS t WHERE t.game_id = m.game_id), 0)
WHERE m.status = 'open';

-- One row per game whose bets and market were held at its end: status held
-- until an admin releases them (settled as the game ended) or voids them
-- (bets refunded, shares paid half each).
CREATE TABLE integrity_reviews (
    game_id      uuid PRIMARY KEY REFERENCES games (id),
    status       text NOT NULL CHECK (status IN ('held', 'released', 'voided')),
    winner_id    uuid NOT NULL REFERENCES users (id),
    reason       text NOT NULL,
    pools_minor  bigint NOT NULL,
    volume_minor bigint NOT NULL,
    held_at      timestamptz NOT NULL,
    decided_at   timestamptz,
    decided_by   uuid REFERENCES users (id),
    CHECK ((status = 'held') = (decided_at IS NULL))
);
CREATE INDEX integrity_reviews_held_idx ON integrity_reviews (held_at) WHERE status = 'held';

-- The client addresses a user signed in from, with the last time: two
-- accounts that signed in from one address within 30 days are linked when
-- LINK_BY_IP is on.
CREATE TABLE sign_in_addresses (
    user_id uuid NOT NULL REFERENCES users (id),
    address text NOT NULL,
    last_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, address)
);
CREATE INDEX sign_in_addresses_address_idx ON sign_in_addresses (address, last_at);

-- Links are looked up by pair: tips either way, transfers to a wallet.
CREATE INDEX tips_pair_idx ON tips (from_user_id, to_user_id, created_at);
CREATE INDEX intents_transfer_destination_idx ON intents (destination, updated_at) WHERE kind = 'transfer' AND status = 'confirmed';
