-- A refund sends money back on chain to the wallet that paid it: a donation,
-- or a bet refused when it landed. The transfer names that money by its
-- signature, found in donations or in bets.
ALTER TABLE settlement_transfers RENAME COLUMN donation TO refund_of;
ALTER TABLE settlement_transfers DROP CONSTRAINT settlement_transfers_donation_fkey;
ALTER TABLE settlement_transfers RENAME CONSTRAINT settlement_transfers_refund_donation_check TO settlement_transfers_refund_of_check;
ALTER INDEX settlement_transfers_donation_idx RENAME TO settlement_transfers_refund_of_idx;

-- What the foreign key to donations kept: a refund names money that exists.
CREATE FUNCTION settlement_transfer_refunds_money() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.refund_of IS NOT NULL AND NOT EXISTS (SELECT 1 FROM donations WHERE signature = NEW.refund_of)
            AND NOT EXISTS (SELECT 1 FROM bets WHERE signature = NEW.refund_of AND late) THEN
        RAISE EXCEPTION 'settlement transfer % refunds %: no donation or refused bet has that signature', NEW.id, NEW.refund_of;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER settlement_transfers_refund_of BEFORE INSERT OR UPDATE OF refund_of ON settlement_transfers
    FOR EACH ROW EXECUTE FUNCTION settlement_transfer_refunds_money();

-- refund_to_balance stays allowed for the transfers made before refunds
-- waited for the wallet's token account; none is made any more.
