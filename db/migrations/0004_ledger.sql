-- The double-entry ledger: the truth for platform balances. Every movement
-- is one ledger transaction whose entries sum to zero, enforced here and not
-- only in Go. Accounts that stand for money held on chain (chain:*) carry
-- the negative of what the platform holds there, so the whole ledger sums
-- to zero.
CREATE TABLE ledger_accounts (
    id             text PRIMARY KEY,
    kind           text NOT NULL,
    user_id        uuid REFERENCES users (id),
    balance        bigint NOT NULL DEFAULT 0,
    allow_negative boolean NOT NULL DEFAULT false,
    CONSTRAINT ledger_accounts_no_overdraft CHECK (allow_negative OR balance >= 0)
);
CREATE INDEX ledger_accounts_user_idx ON ledger_accounts (user_id);

CREATE TABLE ledger_transactions (
    id         bigserial PRIMARY KEY,
    kind       text NOT NULL,
    reference  text NOT NULL,
    memo       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ledger_transactions_reference_key UNIQUE (reference)
);

CREATE TABLE ledger_entries (
    id             bigserial PRIMARY KEY,
    transaction_id bigint NOT NULL REFERENCES ledger_transactions (id),
    account_id     text NOT NULL REFERENCES ledger_accounts (id),
    amount         bigint NOT NULL CHECK (amount <> 0)
);
CREATE INDEX ledger_entries_tx_idx ON ledger_entries (transaction_id);
CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id, id DESC);

-- Balances follow the entries; the CHECK above refuses an overdraft.
CREATE FUNCTION ledger_apply_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ledger_accounts SET balance = balance + NEW.amount WHERE id = NEW.account_id;
    RETURN NEW;
END $$;
CREATE TRIGGER ledger_entries_apply AFTER INSERT ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_apply_entry();

-- At commit, every ledger transaction touched must balance to zero.
CREATE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE total numeric;
BEGIN
    SELECT coalesce(sum(amount), 0) INTO total FROM ledger_entries WHERE transaction_id = NEW.transaction_id;
    IF total <> 0 THEN
        RAISE EXCEPTION 'ledger transaction % does not balance: entries sum to %', NEW.transaction_id, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();

-- The books are append-only.
CREATE FUNCTION ledger_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger entries and transactions are append-only';
END $$;
CREATE TRIGGER ledger_entries_immutable BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_immutable();
CREATE TRIGGER ledger_transactions_immutable BEFORE UPDATE OR DELETE ON ledger_transactions
    FOR EACH ROW EXECUTE FUNCTION ledger_immutable();

INSERT INTO ledger_accounts (id, kind, allow_negative) VALUES
    ('treasury', 'treasury', false),
    ('chain:vault', 'chain', true);

-- Prepared user-signed transactions (prepare/submit).
CREATE TABLE intents (
    id           uuid PRIMARY KEY,
    kind         text NOT NULL,
    user_id      uuid NOT NULL REFERENCES users (id),
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    destination  text NOT NULL,
    reference    text NOT NULL DEFAULT '',
    message      bytea NOT NULL,
    status       text NOT NULL DEFAULT 'prepared' CHECK (status IN ('prepared', 'submitted', 'confirmed', 'failed')),
    signature    text UNIQUE,
    error        text NOT NULL DEFAULT '',
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX intents_user_idx ON intents (user_id, created_at DESC);

-- Server-signed withdrawals from the vault to a user's wallet.
CREATE TABLE withdrawals (
    id              uuid PRIMARY KEY,
    user_id         uuid NOT NULL REFERENCES users (id),
    amount_minor    bigint NOT NULL CHECK (amount_minor > 0),
    idempotency_key text,
    signature       text NOT NULL UNIQUE,
    raw             bytea NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'confirmed', 'failed')),
    error           text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    CONSTRAINT withdrawals_idempotency_key UNIQUE (user_id, idempotency_key)
);

-- What a user sees in their wallet history.
CREATE TABLE wallet_activity (
    id           bigserial PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id),
    kind         text NOT NULL,
    amount_minor bigint NOT NULL,
    counterparty text NOT NULL DEFAULT '',
    signature    text NOT NULL DEFAULT '',
    status       text NOT NULL DEFAULT 'confirmed',
    created_at   timestamptz NOT NULL
);
CREATE INDEX wallet_activity_user_idx ON wallet_activity (user_id, id DESC);
