-- Support tickets: a user's conversation with staff. A user reads their
-- own tickets by latest activity (updated_at); staff read a status's queue
-- by how long the user has been waiting for an answer (waiting_since: the
-- user's first message since staff last wrote).
CREATE TABLE support_tickets (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    subject       text NOT NULL,
    category      text NOT NULL CHECK (category IN ('account', 'payment', 'game', 'other')),
    game_id       uuid REFERENCES games (id) ON DELETE SET NULL,
    status        text NOT NULL CHECK (status IN ('open', 'answered', 'closed')),
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    waiting_since timestamptz NOT NULL
);
CREATE INDEX support_tickets_user_idx ON support_tickets (user_id, updated_at DESC, id DESC);
CREATE INDEX support_tickets_queue_idx ON support_tickets (status, waiting_since, id);

CREATE TABLE support_messages (
    id          uuid PRIMARY KEY,
    ticket_id   uuid NOT NULL REFERENCES support_tickets (id) ON DELETE CASCADE,
    author      text NOT NULL CHECK (author IN ('user', 'staff')),
    -- the staff member who wrote it; kept for the record, never shown to the user
    staff_id    uuid REFERENCES users (id) ON DELETE SET NULL,
    body        text NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX support_messages_ticket_idx ON support_messages (ticket_id, created_at, id);
