-- A prediction market per two-player game: one outcome per player, shares
-- paid 1 USDC if that player wins. The market row is locked by every order,
-- cancel and the resolution, so instances take orders for one market one
-- at a time. Money locked by open buys and the collateral of outstanding
-- pairs are the ledger account game:<id>:market.
CREATE TABLE markets (
    game_id      uuid PRIMARY KEY REFERENCES games (id),
    outcomes     uuid[] NOT NULL CHECK (cardinality(outcomes) = 2),
    status       text NOT NULL CHECK (status IN ('open', 'resolved')),
    -- per outcome, in the order of outcomes: the last traded price (0: none) and the shares traded
    last_price   bigint[] NOT NULL DEFAULT '{0,0}',
    volume       bigint[] NOT NULL DEFAULT '{0,0}',
    -- per outcome, what one share pays once resolved
    resolution   bigint[],
    created_at   timestamptz NOT NULL,
    resolved_at  timestamptz
);

CREATE TABLE market_orders (
    id            uuid PRIMARY KEY,
    seq           bigserial NOT NULL UNIQUE, -- time priority
    game_id       uuid NOT NULL REFERENCES markets (game_id),
    user_id       uuid NOT NULL REFERENCES users (id),
    side          text NOT NULL CHECK (side IN ('buy', 'sell')),
    outcome_id    uuid NOT NULL REFERENCES users (id),
    price_minor   bigint NOT NULL CHECK (price_minor BETWEEN 10000 AND 990000 AND price_minor % 10000 = 0),
    shares        bigint NOT NULL CHECK (shares BETWEEN 1 AND 100000),
    filled_shares bigint NOT NULL DEFAULT 0,
    time_in_force text NOT NULL CHECK (time_in_force IN ('GTC', 'IOC')),
    status        text NOT NULL CHECK (status IN ('open', 'filled', 'cancelled')),
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    CHECK (filled_shares BETWEEN 0 AND shares),
    CHECK (status <> 'filled' OR filled_shares = shares)
);
CREATE INDEX market_orders_book_idx ON market_orders (game_id, outcome_id, side, price_minor, seq) WHERE status = 'open';
CREATE INDEX market_orders_user_idx ON market_orders (game_id, user_id, seq DESC);

-- A trade as its taker saw it: the taker's outcome and price per share.
CREATE TABLE market_trades (
    id             bigserial PRIMARY KEY,
    game_id        uuid NOT NULL REFERENCES markets (game_id),
    kind           text NOT NULL CHECK (kind IN ('transfer', 'mint', 'merge')),
    outcome_id     uuid NOT NULL REFERENCES users (id),
    price_minor    bigint NOT NULL,
    shares         bigint NOT NULL CHECK (shares > 0),
    maker_order_id uuid NOT NULL REFERENCES market_orders (id),
    taker_order_id uuid NOT NULL REFERENCES market_orders (id),
    created_at     timestamptz NOT NULL
);
CREATE INDEX market_trades_game_idx ON market_trades (game_id, id DESC);

-- shares: held, including locked_shares, which open sells hold.
-- cost_minor: paid for shares less received for shares sold.
CREATE TABLE market_positions (
    game_id       uuid NOT NULL REFERENCES markets (game_id),
    user_id       uuid NOT NULL REFERENCES users (id),
    outcome_id    uuid NOT NULL REFERENCES users (id),
    shares        bigint NOT NULL CHECK (shares >= 0),
    locked_shares bigint NOT NULL CHECK (locked_shares >= 0),
    cost_minor    bigint NOT NULL,
    redeemed_minor bigint,
    PRIMARY KEY (game_id, user_id, outcome_id),
    CHECK (locked_shares <= shares)
);
