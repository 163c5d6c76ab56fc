-- Referrals: every user has a code; a new user names their referrer once,
-- at their first sign-in; the referrers of a staked game's players up to
-- three levels earn a part of its fee, held as pending rewards until they
-- claim them.

-- One row per user: their code and who referred them. referred_by is set
-- at most once (the trigger below refuses any later change), never to the
-- user themselves.
CREATE TABLE referrals (
    user_id     uuid PRIMARY KEY REFERENCES users (id),
    code        text NOT NULL UNIQUE,
    referred_by uuid REFERENCES users (id),
    created_at  timestamptz NOT NULL,
    CONSTRAINT referrals_not_self CHECK (referred_by <> user_id)
);
CREATE INDEX referrals_referred_by_idx ON referrals (referred_by);

CREATE FUNCTION referrals_referrer_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.referred_by IS NOT NULL AND NEW.referred_by IS DISTINCT FROM OLD.referred_by THEN
        RAISE EXCEPTION 'the referrer of user % is set once', OLD.user_id USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.code <> OLD.code THEN
        RAISE EXCEPTION 'the referral code of user % never changes', OLD.user_id USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER referrals_referrer_once BEFORE UPDATE ON referrals
    FOR EACH ROW EXECUTE FUNCTION referrals_referrer_once();

-- Existing users get a code now; new users get one when they are created.
INSERT INTO referrals (user_id, code, created_at)
SELECT id, substr(md5(id::text || clock_timestamp()::text || random()::text), 1, 10), created_at FROM users;

-- A reward: user_id earned amount_minor from game_id's fee because
-- from_user_id, level steps below them, played it.
CREATE TABLE referral_rewards (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id),
    from_user_id uuid NOT NULL REFERENCES users (id),
    level        smallint NOT NULL CHECK (level BETWEEN 1 AND 3),
    game_id      uuid NOT NULL REFERENCES games (id),
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'claimed')),
    created_at   timestamptz NOT NULL,
    claimed_at   timestamptz,
    CONSTRAINT referral_rewards_once UNIQUE (game_id, from_user_id, level),
    CONSTRAINT referral_rewards_claimed CHECK ((status = 'claimed') = (claimed_at IS NOT NULL))
);
CREATE INDEX referral_rewards_user_idx ON referral_rewards (user_id, created_at DESC, id DESC);
CREATE INDEX referral_rewards_pending_idx ON referral_rewards (user_id) WHERE status = 'pending';

-- Rewards not claimed yet, paid out of the treasury's fees; a claim moves
-- them to the earner's available balance.
INSERT INTO ledger_accounts (id, kind, allow_negative) VALUES ('referrals:pending', 'referrals_pending', false);
