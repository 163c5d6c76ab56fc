-- The embedded chain answers getTransaction: the log messages each landed
-- transaction's instructions wrote, the compute units it consumed and the
-- lamports of its message's accounts before and after it. Transactions
-- that landed before are answered with empty lists and no units.
ALTER TABLE localchain.transactions
    ADD COLUMN logs text[],
    ADD COLUMN units bigint CHECK (units >= 0),
    ADD COLUMN pre_balances bigint[],
    ADD COLUMN post_balances bigint[];
