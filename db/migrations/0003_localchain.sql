-- State of the embedded local Solana chain (used when SOLANA_RPC_URL is
-- empty). Kept in its own schema: it stands for the outside world, not for
-- the platform's books.
CREATE SCHEMA localchain;

CREATE TABLE localchain.state (
    id   integer PRIMARY KEY CHECK (id = 1),
    slot bigint NOT NULL
);
INSERT INTO localchain.state (id, slot) VALUES (1, 1);

-- Every account with its lamports; owner is the owning program.
CREATE TABLE localchain.accounts (
    address  text PRIMARY KEY,
    lamports bigint NOT NULL CHECK (lamports >= 0),
    owner    text NOT NULL
);

CREATE TABLE localchain.mints (
    address        text PRIMARY KEY REFERENCES localchain.accounts (address),
    decimals       smallint NOT NULL,
    supply         bigint NOT NULL CHECK (supply >= 0),
    mint_authority text NOT NULL
);

CREATE TABLE localchain.token_accounts (
    address text PRIMARY KEY REFERENCES localchain.accounts (address),
    mint    text NOT NULL REFERENCES localchain.mints (address),
    owner   text NOT NULL,
    amount  bigint NOT NULL CHECK (amount >= 0)
);

CREATE TABLE localchain.blockhashes (
    hash       text PRIMARY KEY,
    slot       bigint NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX blockhashes_created_idx ON localchain.blockhashes (created_at DESC);

CREATE TABLE localchain.transactions (
    signature  text PRIMARY KEY,
    slot       bigint NOT NULL,
    fee        bigint NOT NULL,
    raw        bytea,
    created_at timestamptz NOT NULL
);
