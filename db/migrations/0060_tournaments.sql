-- Tournaments (arenas): for a fixed time, entrants are paired again and
-- again into ordinary free games of one type; each result scores, and
-- when the time is up the entries are paid out as prizes by final score.
CREATE TABLE tournaments (
    id               uuid PRIMARY KEY,
    name             text NOT NULL,
    game_type        text NOT NULL,
    settings         jsonb NOT NULL,
    entry_fee_minor  bigint NOT NULL CHECK (entry_fee_minor >= 0),
    prize_split_bps  integer[] NOT NULL,
    starts_at        timestamptz NOT NULL,
    ends_at          timestamptz NOT NULL CHECK (ends_at > starts_at),
    max_players      integer NOT NULL CHECK (max_players >= 2),
    status           text NOT NULL CHECK (status IN ('scheduled', 'running', 'finished', 'cancelled')),
    created_by       uuid NOT NULL REFERENCES users (id),
    created_at       timestamptz NOT NULL,
    -- The last event of the tournament's room (like games.seq).
    seq              integer NOT NULL DEFAULT 0,
    -- Entries in the standings (a player who withdrew after the start
    -- stays in them), and the entry fees locked for the prizes.
    player_count     integer NOT NULL DEFAULT 0 CHECK (player_count >= 0),
    pool_minor       bigint NOT NULL DEFAULT 0 CHECK (pool_minor >= 0),
    -- When the entrants were told it starts in a minute.
    reminded_at      timestamptz,
    -- When the standings were last sent to the room, and a hash of what
    -- they said: a running tournament's are read again at most once a
    -- second and sent when they differ. Before the start they change only
    -- with joins and withdrawals, which record when (changed_at).
    standings_at     timestamptz,
    standings_hash   bigint,
    changed_at       timestamptz NOT NULL,
    -- Once finished: the prizes paid, [{userId, amountMinor}].
    prizes           jsonb,
    finished_at      timestamptz
);
-- The worker claims the tournaments that have work: scheduled ones whose
-- start (or reminder) is near, running ones.
CREATE INDEX tournaments_open_idx ON tournaments (starts_at) WHERE status IN ('scheduled', 'running');
CREATE INDEX tournaments_list_idx ON tournaments (status, starts_at);

CREATE TABLE tournament_players (
    tournament_id  uuid NOT NULL REFERENCES tournaments (id),
    user_id        uuid NOT NULL REFERENCES users (id),
    joined_at      timestamptz NOT NULL,
    -- The ledger reference of the entry fee locked for this entry (NULL
    -- for a free tournament): a refund is keyed by it, so an entry is
    -- refunded at most once.
    entry_ref      text UNIQUE,
    fee_minor      bigint NOT NULL CHECK (fee_minor >= 0),
    -- Withdrew after the start: stays in the standings, is not paired.
    paused         boolean NOT NULL DEFAULT false,
    score          integer NOT NULL DEFAULT 0,
    games          integer NOT NULL DEFAULT 0,
    wins           integer NOT NULL DEFAULT 0,
    draws          integer NOT NULL DEFAULT 0,
    losses         integer NOT NULL DEFAULT 0,
    -- Wins in a row: from 2 on the player is on fire.
    streak         integer NOT NULL DEFAULT 0,
    last_opponent  uuid REFERENCES users (id),
    current_game   uuid REFERENCES games (id),
    -- Since when the player waits for a pairing (NULL while in a game).
    waiting_since  timestamptz,
    PRIMARY KEY (tournament_id, user_id)
);
CREATE INDEX tournament_players_user_idx ON tournament_players (user_id);
CREATE INDEX tournament_players_waiting_idx ON tournament_players (tournament_id)
    WHERE current_game IS NULL AND NOT paused;

-- A tournament's room: its events, numbered per tournament, written in
-- the transaction that causes them (like game_events).
CREATE TABLE tournament_events (
    tournament_id uuid NOT NULL REFERENCES tournaments (id),
    seq           integer NOT NULL,
    name          text NOT NULL,
    data          jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (tournament_id, seq)
);

-- A tournament's games are ordinary free games that know their
-- tournament.
ALTER TABLE games ADD COLUMN tournament_id uuid REFERENCES tournaments (id);
CREATE INDEX games_tournament_idx ON games (tournament_id, status) WHERE tournament_id IS NOT NULL;
