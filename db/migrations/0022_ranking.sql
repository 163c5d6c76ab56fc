-- Results, Glicko-2 ratings and leaderboards. Every row here is written in
-- the transaction that finishes the game, so the boards never show a game
-- whose payout did not happen (or miss one that did).

-- One row per player of each completed game (cancelled games are not
-- results). net_minor is what the game paid the player minus their stake:
-- payout - stake for the winner, -stake for the loser, 0 after a draw.
CREATE TABLE player_results (
    game_id     uuid NOT NULL REFERENCES games (id),
    user_id     uuid NOT NULL REFERENCES users (id),
    game_type   text NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('win', 'loss', 'draw')),
    stake_minor bigint NOT NULL CHECK (stake_minor >= 0),
    net_minor   bigint NOT NULL,
    finished_at timestamptz NOT NULL,
    PRIMARY KEY (game_id, user_id)
);
CREATE INDEX player_results_user_idx ON player_results (user_id, finished_at DESC);

-- A player's rating in one game type, and their totals in it: the per-game
-- board reads its whole row from here, in the order of ratings_board_idx
-- (established players first, then by rating), so a page is an index range
-- however many players there are. provisional is stored (not computed in
-- the query) so that the index can order by it; 110 is
-- rating.ProvisionalDeviation.
CREATE TABLE ratings (
    user_id     uuid NOT NULL REFERENCES users (id),
    game_type   text NOT NULL,
    rating      double precision NOT NULL,
    deviation   double precision NOT NULL,
    volatility  double precision NOT NULL,
    provisional boolean GENERATED ALWAYS AS (deviation > 110) STORED,
    games       integer NOT NULL DEFAULT 0,
    wins        integer NOT NULL DEFAULT 0,
    losses      integer NOT NULL DEFAULT 0,
    draws       integer NOT NULL DEFAULT 0,
    net_minor   bigint NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (user_id, game_type)
);
CREATE INDEX ratings_board_idx ON ratings (game_type, provisional, rating DESC, user_id);

-- The rating after each game, for a profile's chart.
CREATE TABLE rating_history (
    user_id     uuid NOT NULL REFERENCES users (id),
    game_id     uuid NOT NULL REFERENCES games (id),
    game_type   text NOT NULL,
    rating      double precision NOT NULL,
    deviation   double precision NOT NULL,
    volatility  double precision NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, game_id)
);
CREATE INDEX rating_history_chart_idx ON rating_history (user_id, game_type, recorded_at DESC, game_id);

-- Totals per player per leaderboard period: 'all' (starts 1970-01-01), and
-- the UTC calendar 'day', ISO 'week' (from Monday) and 'month' that began
-- on starts. A game adds to the four rows of each player. Summing
-- player_results over a period at read time would aggregate hundreds of
-- thousands of rows for a month on a busy site; these rows make every
-- period's page an index range of leaderboard_totals_rank_idx, in the
-- board's order, at the cost of four small upserts per player per game.
-- Rows of past periods stay: they are small and keep old boards readable.
CREATE TABLE leaderboard_totals (
    period    text NOT NULL CHECK (period IN ('all', 'month', 'week', 'day')),
    starts    date NOT NULL,
    user_id   uuid NOT NULL REFERENCES users (id),
    games     integer NOT NULL,
    wins      integer NOT NULL,
    losses    integer NOT NULL,
    draws     integer NOT NULL,
    net_minor bigint NOT NULL,
    PRIMARY KEY (period, starts, user_id)
);
CREATE INDEX leaderboard_totals_rank_idx ON leaderboard_totals (period, starts, net_minor DESC, wins DESC, user_id);
-- period and starts are not independent ('all' always starts in 1970):
-- without these statistics the planner multiplies their selectivities,
-- expects 3% of the all-time board's rows, and sorts the whole board in
-- memory for a deep page (850 ms at 100,000 players) instead of walking
-- the index above.
CREATE STATISTICS leaderboard_totals_period_stats (dependencies, mcv) ON period, starts FROM leaderboard_totals;
