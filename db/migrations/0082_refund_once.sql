-- A donation or bet is refunded at most once, whichever path refunds it
-- (refused as it landed, or the game drawn or cancelled).
CREATE UNIQUE INDEX settlement_transfers_refund_once ON settlement_transfers (refund_of) WHERE refund_of IS NOT NULL;
