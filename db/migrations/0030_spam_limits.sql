-- SOL the platform's fee payer spent for all users together, by UTC day:
-- one row a day, which every instance charges with a conditional upsert,
-- so that the global budget holds across instances and concurrent
-- requests.
CREATE TABLE fee_payer_global_spend (
    day      date PRIMARY KEY,
    lamports bigint NOT NULL CHECK (lamports >= 0)
);

-- When a user was last notified of a friend request from another: asking,
-- withdrawing and asking again notifies at most once a day.
CREATE TABLE friend_request_notices (
    from_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    to_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    notified_at timestamptz NOT NULL,
    PRIMARY KEY (from_id, to_id)
);

-- A sender's pending challenges are counted on every new challenge.
CREATE INDEX challenges_from_idx ON challenges (from_user, status);
