-- Donation lists show which donations were refunded: those a settlement
-- transfer names.
CREATE INDEX settlement_transfers_donation_idx ON settlement_transfers (donation) WHERE donation IS NOT NULL;
