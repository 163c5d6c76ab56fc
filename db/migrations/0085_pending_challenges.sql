-- The deadline worker expires the pending challenges whose time passed
-- and tells both users: it finds them by this index, without reading the
-- answered ones.
CREATE INDEX challenges_pending_expiry_idx ON challenges (expires_at) WHERE status = 'pending';
