-- Pari-mutuel bets of spectators on one player of a game, paid from the
-- bettor's wallet into the game's escrow. What a prepared bet is on is kept
-- with its intent, since the broadcast names only the intent.
CREATE TABLE bet_intents (
    intent_id  uuid PRIMARY KEY REFERENCES intents (id),
    on_user_id uuid NOT NULL REFERENCES users (id)
);

-- A confirmed bet, recorded once per signature. late: it landed after
-- betting closed and was refunded at once; it is in no pool.
CREATE TABLE bets (
    id           uuid PRIMARY KEY,
    game_id      uuid NOT NULL REFERENCES games (id),
    bettor_id    uuid NOT NULL REFERENCES users (id),
    on_user_id   uuid NOT NULL REFERENCES users (id),
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    signature    text NOT NULL UNIQUE,
    status       text NOT NULL CHECK (status IN ('open', 'won', 'lost', 'refunded')),
    payout_minor bigint NOT NULL DEFAULT 0 CHECK (payout_minor >= 0),
    late         boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL
);
CREATE INDEX bets_game_idx ON bets (game_id, created_at DESC);
CREATE INDEX bets_bettor_idx ON bets (bettor_id, created_at DESC);
