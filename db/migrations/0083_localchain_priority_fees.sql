-- The embedded chain answers getRecentPrioritizationFees from the price per
-- compute unit each landed transaction paid and the accounts it wrote.
ALTER TABLE localchain.transactions
    ADD COLUMN compute_unit_price bigint NOT NULL DEFAULT 0,
    ADD COLUMN writable text[] NOT NULL DEFAULT '{}';
CREATE INDEX transactions_writable_idx ON localchain.transactions USING gin (writable);
CREATE INDEX transactions_slot_idx ON localchain.transactions (slot);
