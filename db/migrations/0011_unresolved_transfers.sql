-- What the resolvers look for on every round: intents sent but not yet
-- confirmed or failed, inline x402 payments still settling, and
-- withdrawals still pending.
CREATE INDEX intents_submitted_idx ON intents (updated_at) WHERE status = 'submitted';
CREATE INDEX x402_payments_settling_idx ON x402_payments (created_at) WHERE status = 'settling';
CREATE INDEX withdrawals_pending_idx ON withdrawals (updated_at) WHERE status = 'pending';
