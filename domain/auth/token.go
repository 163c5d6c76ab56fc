package auth

import (
	"errors"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"wager/domain"
)

// TokenLifetime is how long an access token is valid.
const TokenLifetime = 24 * time.Hour

// Claims are the claims of an access token.
type Claims struct {
	App string `json:"app"`
	jwt.RegisteredClaims
}

// Tokens issues and verifies HS256 access tokens. The algorithm is pinned:
// a token signed with anything else (including "none") is refused.
type Tokens struct {
	secret []byte
	now    domain.Clock

	// verified remembers the claims of the tokens whose signature and
	// claims were checked, by the token's whole text (its signature
	// included, so no other text finds them): a client sends the same
	// token with every request, and checking it each time was about a
	// twentieth of a busy instance's CPU. A remembered token is still
	// refused once it expires; its revocation is the caller's check, made
	// on every request.
	mu       sync.Mutex
	verified map[string]Claims
}

// tokenLeeway is the clock skew allowed in a token's times.
const tokenLeeway = 5 * time.Second

// NewTokens returns a token issuer over secret (at least 32 bytes).
func NewTokens(secret []byte, now domain.Clock) *Tokens { return &Tokens{secret: secret, now: now} }

// Issue returns a signed token for the user and calling application.
func (t *Tokens) Issue(userID, appID string) (string, error) {
	now := t.now()
	claims := Claims{App: appID, RegisteredClaims: jwt.RegisteredClaims{
		Subject:   userID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(TokenLifetime)),
		ID:        uuid.NewString(),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret)
}

// Parse verifies a token and returns its claims. Any failure (malformed,
// other algorithm, bad signature, expired, missing claims) is 401
// UNAUTHORIZED with a message that says which, never the secret.
func (t *Tokens) Parse(token string) (Claims, error) {
	t.mu.Lock()
	c, ok := t.verified[token]
	t.mu.Unlock()
	if ok {
		if !t.now().Before(c.ExpiresAt.Add(tokenLeeway)) {
			return Claims{}, errExpired()
		}
		return c, nil
	}
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(t.now),
		jwt.WithLeeway(tokenLeeway),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, errExpired()
	case err != nil:
		return Claims{}, domain.Errorf(domain.CodeUnauthorized, "the access token is invalid")
	case c.Subject == "" || c.ID == "":
		return Claims{}, domain.Errorf(domain.CodeUnauthorized, "the access token is invalid")
	}
	t.mu.Lock()
	if t.verified == nil || len(t.verified) >= cacheSize {
		t.verified = map[string]Claims{} // start over: the tokens in use are verified again once
	}
	t.verified[token] = c
	t.mu.Unlock()
	return c, nil
}

func errExpired() error {
	return domain.Errorf(domain.CodeUnauthorized, "the access token has expired; sign in again")
}
