-- An anonymous client's inline payment is bound to the caller that first
-- presented it (app id or IP), so that a copy of its transaction taken from
-- the chain cannot spend it while it is settled and unused.
ALTER TABLE x402_payments ADD COLUMN presented_by text;
