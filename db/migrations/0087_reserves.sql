-- The proof of reserves (domain/reserves): every RESERVES_INTERVAL one
-- snapshot of what the platform owes each user (a Merkle-sum tree whose
-- root sum is the liabilities) beside the USDC its token accounts hold on
-- chain, signed with the games log's key. leaves holds each user's id,
-- salt and balance (40 bytes each, in no particular order), from which
-- the tree and every user's path are rebuilt; only the latest snapshots
-- keep them.
CREATE TABLE reserves_snapshots (
    id                bigint PRIMARY KEY CHECK (id > 0),
    taken_at          timestamptz NOT NULL,
    slot              bigint NOT NULL CHECK (slot >= 0),
    root_hash         bytea NOT NULL CHECK (length(root_hash) = 32),
    liabilities_minor bigint NOT NULL CHECK (liabilities_minor >= 0),
    users             integer NOT NULL CHECK (users >= 0),
    assets            jsonb NOT NULL,
    assets_minor      bigint NOT NULL CHECK (assets_minor >= 0),
    signature         text NOT NULL,
    leaves            bytea
);
CREATE SEQUENCE reserves_snapshots_id_seq OWNED BY reserves_snapshots.id;
