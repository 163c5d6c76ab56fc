package auth

import (
	"strings"
	"testing"
	"time"

	"wager/domain"
)

// A token is verified once and remembered; what is remembered must not
// outlive the token nor let another text pass for it.
func TestARememberedTokenStillExpiresAndNoOtherTextPassesForIt(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tokens := NewTokens([]byte(strings.Repeat("k", 32)), func() time.Time { return now })
	token, err := tokens.Issue("user-1", "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // checked, then remembered
		if c, err := tokens.Parse(token); err != nil || c.Subject != "user-1" || c.App != "agent-1" {
			t.Fatalf("a valid token: got %+v, %v", c, err)
		}
	}

	// Another signature on the same claims is another text: verified anew, and refused.
	parts := strings.Split(token, ".")
	forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	if _, err := tokens.Parse(forged); domain.ErrorCode(err) != domain.CodeUnauthorized {
		t.Errorf("a token with the remembered claims and another signature: got %v, want UNAUTHORIZED", err)
	}

	now = now.Add(TokenLifetime + time.Second) // within the leeway
	if _, err := tokens.Parse(token); err != nil {
		t.Errorf("a token one second past its expiry (within the leeway): %v", err)
	}
	now = now.Add(5 * time.Second)
	_, err = tokens.Parse(token)
	if domain.ErrorCode(err) != domain.CodeUnauthorized || !strings.Contains(err.Error(), "expired") {
		t.Errorf("a remembered token past its expiry: got %v, want UNAUTHORIZED (expired)", err)
	}
}
