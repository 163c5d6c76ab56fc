-- Every transaction the platform signs or co-signs is kept, before it is
-- first sent, with the last block height its blockhash is valid for: it is
-- sent again until the chain reports it or that height has passed, and
-- only then is it called expired (and, for the platform's own transfers,
-- signed anew). Rows from before have no height: their custodian bounds it
-- by the chain's height when it first looks.
ALTER TABLE intents ADD COLUMN raw bytea;
ALTER TABLE intents ADD COLUMN last_valid_block_height bigint;
ALTER TABLE withdrawals ADD COLUMN last_valid_block_height bigint;
ALTER TABLE settlement_transfers ADD COLUMN last_valid_block_height bigint;
ALTER TABLE x402_payments ADD COLUMN raw bytea;
ALTER TABLE x402_payments ADD COLUMN last_valid_block_height bigint;
-- An intent whose transaction was not seen before its last valid height
-- was finalized ends expired: it never lands, and nothing moved.
ALTER TABLE intents DROP CONSTRAINT intents_status_check;
ALTER TABLE intents ADD CONSTRAINT intents_status_check CHECK (status IN ('prepared', 'submitted', 'confirmed', 'failed', 'expired'));
