-- Anchors on Solana (domain/anchors): the public log's checkpoints and the
-- proofs of reserves written by the fee payer in SPL Memo transactions.
-- A transaction is stored before it is first sent, and sent again until it
-- lands or its blockhash expires; one that fails or expires is replaced by
-- a new one. At most one anchor of a tree size or a snapshot is pending or
-- landed.
CREATE TABLE transparency_anchors (
    id                      bigserial PRIMARY KEY,
    kind                    text NOT NULL CHECK (kind IN ('games-log', 'reserves')),
    size                    bigint CHECK (size > 0),
    snapshot_id             bigint REFERENCES reserves_snapshots (id),
    root_hash               bytea NOT NULL CHECK (length(root_hash) = 32),
    memo                    text NOT NULL,
    signature               text NOT NULL UNIQUE,
    raw                     bytea NOT NULL,
    last_valid_block_height bigint NOT NULL,
    status                  text NOT NULL CHECK (status IN ('pending', 'landed', 'failed', 'expired')),
    slot                    bigint,
    created_at              timestamptz NOT NULL,
    landed_at               timestamptz,
    CHECK ((kind = 'games-log') = (size IS NOT NULL)),
    CHECK ((kind = 'reserves') = (snapshot_id IS NOT NULL)),
    CHECK ((status = 'landed') = (slot IS NOT NULL AND landed_at IS NOT NULL))
);
CREATE UNIQUE INDEX transparency_anchors_size_once ON transparency_anchors (size)
    WHERE kind = 'games-log' AND status IN ('pending', 'landed');
CREATE UNIQUE INDEX transparency_anchors_snapshot_once ON transparency_anchors (snapshot_id)
    WHERE kind = 'reserves' AND status IN ('pending', 'landed');
CREATE INDEX transparency_anchors_landed_idx ON transparency_anchors (landed_at DESC, id DESC) WHERE status = 'landed';
