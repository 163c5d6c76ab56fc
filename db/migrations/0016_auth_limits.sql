-- Handshakes are limited per wallet address and client address and per
-- client address, counted over the challenges of the last minute; expired
-- challenges are deleted.
ALTER TABLE auth_challenges ADD COLUMN client_ip text NOT NULL DEFAULT '';
CREATE INDEX auth_challenges_recent_wallet_idx ON auth_challenges (wallet_address, client_ip, issued_at);
CREATE INDEX auth_challenges_recent_ip_idx ON auth_challenges (client_ip, issued_at);
CREATE INDEX auth_challenges_expiry_idx ON auth_challenges (expires_at);
CREATE INDEX sessions_expiry_idx ON sessions (expires_at);

-- Access tokens signed out before they expire: refused by every instance
-- until then.
CREATE TABLE revoked_tokens (
    jti        text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX revoked_tokens_expiry_idx ON revoked_tokens (expires_at);
