-- The public log of games (domain/gamelog): a game whose money is final
-- is queued in the transaction that makes it final (games_log_queue); the
-- sequencer gives each queued game the log's next index, stores its
-- record's exact bytes (games_log) and the Merkle tree's new hashes
-- (games_log_hashes, indexed as golang.org/x/mod/sumdb/tlog stores them),
-- and takes it off the queue, all in one transaction under one lock.
CREATE TABLE games_log_queue (
    game_id   uuid PRIMARY KEY REFERENCES games (id),
    integrity text NOT NULL CHECK (integrity IN ('none', 'released', 'voided')),
    queued_at timestamptz NOT NULL
);

CREATE TABLE games_log (
    idx         bigint PRIMARY KEY CHECK (idx >= 0),
    game_id     uuid NOT NULL UNIQUE REFERENCES games (id),
    record      bytea NOT NULL,
    appended_at timestamptz NOT NULL
);

CREATE TABLE games_log_hashes (
    id   bigint PRIMARY KEY CHECK (id >= 0),
    hash bytea NOT NULL CHECK (length(hash) = 32)
);

-- Nothing in the log is ever changed or removed.
CREATE FUNCTION games_log_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the games log is append-only: % on % refused', TG_OP, TG_TABLE_NAME;
END $$;
CREATE TRIGGER games_log_immutable BEFORE UPDATE OR DELETE ON games_log
    FOR EACH ROW EXECUTE FUNCTION games_log_immutable();
CREATE TRIGGER games_log_hashes_immutable BEFORE UPDATE OR DELETE ON games_log_hashes
    FOR EACH ROW EXECUTE FUNCTION games_log_immutable();
