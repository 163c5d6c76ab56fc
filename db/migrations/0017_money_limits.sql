-- The platform's own addresses (its vault, fee payer and game escrows): a
-- user's plain transfer may not go to them (only to the deposit address).
CREATE TABLE platform_addresses (
    address text PRIMARY KEY,
    kind    text NOT NULL
);

-- SOL the platform's fee payer spent for each user, by UTC day, bounded.
CREATE TABLE fee_payer_spend (
    user_id  uuid NOT NULL REFERENCES users (id),
    day      date NOT NULL,
    lamports bigint NOT NULL CHECK (lamports >= 0),
    PRIMARY KEY (user_id, day)
);
