package domain

import "github.com/google/uuid"

// CanonicalID returns the canonical form of a resource id, a UUID in any
// spelling uuid.Parse reads, and false when s is none. Queries must use the
// canonical form: PostgreSQL does not read every such spelling
// (urn:uuid:...).
func CanonicalID(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return u.String(), true
}
