-- A donation refund to a wallet that has no USDC token account is not sent
-- there (opening the account would cost the platform its rent, again each
-- time the donor closes it): the escrow's USDC goes to the vault and the
-- donor's platform balance is credited instead.
ALTER TABLE settlement_transfers DROP CONSTRAINT settlement_transfers_kind_check;
ALTER TABLE settlement_transfers ADD CONSTRAINT settlement_transfers_kind_check
    CHECK (kind IN ('sweep', 'refund', 'refund_to_balance'));
ALTER TABLE settlement_transfers ADD CONSTRAINT settlement_transfers_refund_donation_check
    CHECK (kind = 'sweep' OR donation IS NOT NULL);
