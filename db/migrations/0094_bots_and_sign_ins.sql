-- An account that declared itself a bot (POST /users/me/bot), for good;
-- the demo bots are bots too. Arenas may keep bots out (agents_allowed).
ALTER TABLE users ADD COLUMN bot_account boolean NOT NULL DEFAULT false;
UPDATE users SET bot_account = true WHERE bot;
ALTER TABLE tournaments ADD COLUMN agents_allowed boolean NOT NULL DEFAULT true;

-- The last two sign-ins: the one before the current is shown at sign-in.
ALTER TABLE users ADD COLUMN signed_in_at timestamptz, ADD COLUMN previous_sign_in_at timestamptz;
