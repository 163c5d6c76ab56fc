-- Chat: game rooms and direct messages in one table. A game message's
-- context_id is the game id; a direct message's is the pair key
-- "<smaller user id>:<larger user id>", so both directions of a
-- conversation share one index range.
CREATE TABLE chat_messages (
    id           bigserial PRIMARY KEY,
    context_type text NOT NULL CHECK (context_type IN ('game', 'dm')),
    context_id   text NOT NULL,
    sender_id    uuid REFERENCES users (id),
    recipient_id uuid REFERENCES users (id),
    text         text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 500),
    role         text CHECK (role IN ('player', 'spectator', 'system')),
    metadata     jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    -- Game messages carry a role, and only system messages lack a sender;
    -- direct messages always have both ends and no role.
    CHECK (context_type <> 'game' OR (role IS NOT NULL AND (role = 'system') = (sender_id IS NULL))),
    CHECK (context_type <> 'dm' OR (role IS NULL AND sender_id IS NOT NULL AND recipient_id IS NOT NULL
                                    AND sender_id <> recipient_id))
);
-- History pages: newest first within one room or conversation.
CREATE INDEX chat_messages_context_idx ON chat_messages (context_type, context_id, id DESC);
-- The per-sender rate limit counts a sender's recent messages; the
-- thread list finds a user's conversations from both ends.
CREATE INDEX chat_messages_sender_idx ON chat_messages (sender_id, created_at DESC) WHERE sender_id IS NOT NULL;
CREATE INDEX chat_messages_recipient_idx ON chat_messages (recipient_id, id DESC) WHERE context_type = 'dm';

-- How far each user has read each conversation (for unread counts).
CREATE TABLE dm_reads (
    user_id      uuid NOT NULL REFERENCES users (id),
    other_id     uuid NOT NULL REFERENCES users (id),
    last_read_id bigint NOT NULL,
    PRIMARY KEY (user_id, other_id)
);

-- A block stops direct messages in both directions.
CREATE TABLE user_blocks (
    blocker_id uuid NOT NULL REFERENCES users (id),
    blocked_id uuid NOT NULL REFERENCES users (id),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (blocker_id, blocked_id),
    CHECK (blocker_id <> blocked_id)
);
CREATE INDEX user_blocks_blocked_idx ON user_blocks (blocked_id);
