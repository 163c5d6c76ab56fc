CREATE TABLE feature_flags (
    name        text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    enabled     boolean NOT NULL DEFAULT false,
    description text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text
);

-- Every change, for the admin audit trail.
CREATE TABLE feature_flag_changes (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL REFERENCES feature_flags (name),
    enabled    boolean NOT NULL,
    changed_by text NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feature_flag_changes_name_idx ON feature_flag_changes (name, changed_at DESC);

INSERT INTO feature_flags (name, description) VALUES
    ('maintenance-mode', 'Answer 503 MAINTENANCE to everyone but admins, except /health, /version and /feature-flags.'),
    ('abuse-controls', 'Charge callers over the per-endpoint request threshold with HTTP 402 payments.');
