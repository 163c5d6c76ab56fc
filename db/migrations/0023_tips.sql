-- Tips: USDC sent from one user's wallet straight to another's. What a
-- prepared tip is for (recipient, the chat it was given in) is kept with
-- its intent, since the broadcast names only the intent.
CREATE TABLE tip_intents (
    intent_id    uuid PRIMARY KEY REFERENCES intents (id),
    to_user_id   uuid NOT NULL REFERENCES users (id),
    context_type text CHECK (context_type IN ('game', 'dm')),
    context_id   text,
    CHECK ((context_type IS NULL) = (context_id IS NULL))
);

-- A confirmed tip, recorded once per signature. message is the chat
-- message that announced it (as its sender sees it), so that a repeated
-- broadcast answers the same.
CREATE TABLE tips (
    signature    text PRIMARY KEY,
    intent_id    uuid NOT NULL UNIQUE REFERENCES intents (id),
    from_user_id uuid NOT NULL REFERENCES users (id),
    to_user_id   uuid NOT NULL REFERENCES users (id),
    amount_minor bigint NOT NULL CHECK (amount_minor > 0),
    context_type text CHECK (context_type IN ('game', 'dm')),
    context_id   text,
    message      jsonb,
    created_at   timestamptz NOT NULL,
    CHECK (from_user_id <> to_user_id)
);
CREATE INDEX tips_to_user_idx ON tips (to_user_id, created_at DESC);
CREATE INDEX tips_from_user_idx ON tips (from_user_id, created_at DESC);

-- A tip given in a conversation is announced there by a system message,
-- which still has both ends (the tipper as sender) so that the thread
-- list and the context id work as for any direct message.
ALTER TABLE chat_messages DROP CONSTRAINT chat_messages_check1;
ALTER TABLE chat_messages ADD CONSTRAINT chat_messages_dm_check
    CHECK (context_type <> 'dm' OR ((role IS NULL OR role = 'system') AND sender_id IS NOT NULL
                                    AND recipient_id IS NOT NULL AND sender_id <> recipient_id));
