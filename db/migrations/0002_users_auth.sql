CREATE TABLE users (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    wallet_address  text NOT NULL UNIQUE,
    username        text NOT NULL CHECK (username ~ '^[a-z0-9_]{3,20}$'),
    display_name    text NOT NULL DEFAULT '' CHECK (char_length(display_name) <= 40),
    bio             text NOT NULL DEFAULT '' CHECK (char_length(bio) <= 280),
    avatar_image_id uuid,
    cover_image_id  uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_username_key ON users (username);
-- Prefix search (LIKE 'abc%') on the lowercase usernames.
CREATE INDEX users_username_prefix_idx ON users (username text_pattern_ops);

-- Sign-in challenges: single use, short-lived.
CREATE TABLE auth_challenges (
    nonce          text PRIMARY KEY,
    wallet_address text NOT NULL,
    app_id         text NOT NULL,
    message        text NOT NULL,
    issued_at      timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    consumed_at    timestamptz
);
CREATE INDEX auth_challenges_wallet_idx ON auth_challenges (wallet_address, app_id, issued_at DESC);

-- Browser sessions; the cookie holds a random token, the table its hash.
CREATE TABLE sessions (
    token_hash bytea PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf_token text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

-- Sanitised profile images (pixels only), served at /images/:id.
CREATE TABLE images (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('avatar', 'cover')),
    content_type text NOT NULL CHECK (content_type IN ('image/png', 'image/jpeg')),
    data         bytea NOT NULL,
    width        integer NOT NULL,
    height       integer NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE users
    ADD CONSTRAINT users_avatar_fk FOREIGN KEY (avatar_image_id) REFERENCES images (id) ON DELETE SET NULL,
    ADD CONSTRAINT users_cover_fk FOREIGN KEY (cover_image_id) REFERENCES images (id) ON DELETE SET NULL;
