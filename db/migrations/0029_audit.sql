-- The admin audit log: one row per admin action (a flag set, a support
-- answer or close, an integrity release or void), written in the action's
-- own transaction so that the action and its record commit or roll back
-- together. The actor's username is kept as it was when they acted.
CREATE TABLE admin_audit (
    id             bigserial PRIMARY KEY,
    actor_id       uuid NOT NULL REFERENCES users (id),
    actor_username text NOT NULL,
    action         text NOT NULL CHECK (action ~ '^[a-z][a-z_]*(\.[a-z][a-z_]*)+$'),
    target         text NOT NULL CHECK (target <> ''),
    data           jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object'),
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- The log is append-only, like the ledger: any statement that would change
-- or remove entries fails, even one that matches no row.
CREATE FUNCTION admin_audit_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the admin audit log is append-only: % refused', TG_OP;
END $$;
CREATE TRIGGER admin_audit_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON admin_audit
    FOR EACH STATEMENT EXECUTE FUNCTION admin_audit_immutable();
