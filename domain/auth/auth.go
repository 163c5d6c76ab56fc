// Package auth signs users in with a Solana wallet (a Sign-In-With-Solana
// style challenge signed with ed25519), issues access tokens for API
// clients and keeps browser sessions.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/users"
)

// ChallengeLifetime is how long a sign-in challenge can be used.
const ChallengeLifetime = 5 * time.Minute

// SessionLifetime is how long a browser session lasts.
const SessionLifetime = 7 * 24 * time.Hour

// Statement is the human sentence in every sign-in message.
const Statement = "Sign in to Wager Arena. This request will not trigger a blockchain transaction or cost any fees."

// Challenge is one sign-in challenge.
type Challenge struct {
	bun.BaseModel `bun:"table:auth_challenges"`

	Nonce         string     `bun:"nonce,pk"`
	WalletAddress string     `bun:"wallet_address"`
	AppID         string     `bun:"app_id"`
	Message       string     `bun:"message"`
	IssuedAt      time.Time  `bun:"issued_at"`
	ExpiresAt     time.Time  `bun:"expires_at"`
	ConsumedAt    *time.Time `bun:"consumed_at"`
}

// Session is a browser session.
type Session struct {
	bun.BaseModel `bun:"table:sessions"`

	TokenHash []byte    `bun:"token_hash,pk"`
	UserID    string    `bun:"user_id,type:uuid"`
	CSRFToken string    `bun:"csrf_token"`
	CreatedAt time.Time `bun:"created_at"`
	ExpiresAt time.Time `bun:"expires_at"`
}

// Service runs sign-in and sessions.
type Service struct {
	db       *bun.DB
	now      domain.Clock
	cards    cache[card]
	sessions cache[Session]
	Tokens   *Tokens
	domain   string // the service's host, stated in every message
	uri      string // the service's public URL
	chainID  string
	admins   map[string]bool
}

// Config configures a Service.
type Config struct {
	PublicURL    string // e.g. http://localhost:8080
	ChainID      string // e.g. localnet, devnet, mainnet
	AdminWallets []string
	JWTSecret    []byte
}

// New returns a Service.
func New(bdb *bun.DB, now domain.Clock, cfg Config) *Service {
	host := strings.TrimPrefix(strings.TrimPrefix(cfg.PublicURL, "https://"), "http://")
	host = strings.TrimSuffix(host, "/")
	admins := map[string]bool{}
	for _, w := range cfg.AdminWallets {
		admins[w] = true
	}
	return &Service{db: bdb, now: now, Tokens: NewTokens(cfg.JWTSecret, now), domain: host,
		uri: cfg.PublicURL, chainID: cfg.ChainID, admins: admins}
}

// IsAdmin reports whether a wallet is listed as an admin.
func (s *Service) IsAdmin(wallet string) bool { return s.admins[wallet] }

var appIDRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// CheckAppID validates an X-App-Id value: 400 APP_ID_REQUIRED when missing,
// VALIDATION_ERROR when malformed.
func CheckAppID(appID string) error {
	if appID == "" {
		return domain.Errorf(domain.CodeAppIDRequired, "the X-App-Id header is required")
	}
	if !appIDRE.MatchString(appID) {
		return domain.Invalid(map[string]string{"X-App-Id": "1 to 64 characters: letters, digits and . _ : -"})
	}
	return nil
}

// ParseWallet validates a base58 Solana address.
func ParseWallet(field, address string) (solana.PublicKey, error) {
	pk, err := solana.PublicKeyFromBase58(strings.TrimSpace(address))
	if err != nil {
		return solana.PublicKey{}, domain.Invalid(map[string]string{field: "must be a base58 Solana address (32 bytes)"})
	}
	return pk, nil
}

// Handshake issues a single-use challenge for the wallet and app. It
// returns VALIDATION_ERROR for a malformed address.
func (s *Service) Handshake(ctx context.Context, walletAddress, appID string) (Challenge, error) {
	if err := CheckAppID(appID); err != nil {
		return Challenge{}, err
	}
	pk, err := ParseWallet("walletAddress", walletAddress)
	if err != nil {
		return Challenge{}, err
	}
	raw := make([]byte, 16)
	rand.Read(raw)
	now := s.now().Truncate(time.Microsecond)
	c := Challenge{
		Nonce: base58.Encode(raw), WalletAddress: pk.String(), AppID: appID,
		IssuedAt: now, ExpiresAt: now.Add(ChallengeLifetime),
	}
	c.Message = s.message(c)
	if _, err := s.db.NewInsert().Model(&c).Exec(ctx); err != nil {
		return Challenge{}, err
	}
	return c, nil
}

// message is the Sign-In-With-Solana style text the wallet signs.
func (s *Service) message(c Challenge) string {
	return fmt.Sprintf("%s wants you to sign in with your Solana account:\n%s\n\n%s\n\nURI: %s\nVersion: 1\nChain ID: %s\nNonce: %s\nIssued At: %s\nExpiration Time: %s",
		s.domain, c.WalletAddress, Statement, s.uri, s.chainID, c.Nonce,
		c.IssuedAt.UTC().Format(time.RFC3339), c.ExpiresAt.UTC().Format(time.RFC3339))
}

// errBadLogin is the one answer to every failed login: it says nothing
// about which check failed.
var errBadLogin = domain.Errorf(domain.CodeUnauthorized,
	"the signature does not match a current sign-in challenge for this wallet; request a new one and sign it")

// Login verifies the detached ed25519 signature (base64) of the newest
// unused, unexpired challenge of the wallet and app, consumes it, creates
// the user on first sign-in and returns the user. A failed login changes
// nothing. Every failure is 401 UNAUTHORIZED.
func (s *Service) Login(ctx context.Context, address, signatureB64, appID string) (users.User, error) {
	if err := CheckAppID(appID); err != nil {
		return users.User{}, err
	}
	pk, err := solana.PublicKeyFromBase58(strings.TrimSpace(address))
	if err != nil {
		return users.User{}, errBadLogin
	}
	sigBytes, err := decodeSignature(signatureB64)
	if err != nil {
		return users.User{}, errBadLogin
	}
	var u users.User
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var c Challenge
		err := tx.NewSelect().Model(&c).
			Where("wallet_address = ? AND app_id = ? AND consumed_at IS NULL", pk.String(), appID).
			Order("issued_at DESC").Limit(1).For("UPDATE").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return errBadLogin
		}
		if err != nil {
			return err
		}
		now := s.now()
		if !now.Before(c.ExpiresAt) {
			return errBadLogin
		}
		if !solana.SignatureFromBytes(sigBytes).Verify(pk, []byte(c.Message)) {
			return errBadLogin
		}
		res, err := tx.NewUpdate().Model(&c).Set("consumed_at = ?", now).
			Where("nonce = ? AND consumed_at IS NULL", c.Nonce).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errBadLogin // consumed by a concurrent login
		}
		u, _, err = users.FindOrCreate(ctx, tx, pk.String(), now)
		return err
	})
	return u, err
}

func decodeSignature(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 64 {
			return b, nil
		}
	}
	return nil, errors.New("not a base64 ed25519 signature")
}

// Principal is an authenticated caller.
type Principal struct {
	UserID    string
	Username  string
	Wallet    string
	AppID     string
	Admin     bool
	CSRFToken string // browser sessions only
}

// Authenticate verifies a bearer token sent with the app id and returns the
// caller. It returns 401 UNAUTHORIZED for a bad token or a token of another
// app, and for a user that no longer exists. The token is self-contained:
// the database is read only for a user this instance has not seen lately.
func (s *Service) Authenticate(ctx context.Context, token, appID string) (Principal, error) {
	claims, err := s.Tokens.Parse(token)
	if err != nil {
		return Principal{}, err
	}
	if claims.App != appID {
		return Principal{}, domain.Errorf(domain.CodeUnauthorized, "the access token was issued to another app id")
	}
	return s.principal(ctx, claims.Subject, claims.App, "")
}

// AuthenticateQueryToken verifies a token passed in a URL (WebSocket
// clients cannot set headers); the token's own app id stands.
func (s *Service) AuthenticateQueryToken(ctx context.Context, token string) (Principal, error) {
	claims, err := s.Tokens.Parse(token)
	if err != nil {
		return Principal{}, err
	}
	return s.principal(ctx, claims.Subject, claims.App, "")
}

func (s *Service) principal(ctx context.Context, userID, appID, csrf string) (Principal, error) {
	c, err := s.cards.get(ctx, s.now(), userID, func(ctx context.Context) (card, error) {
		var c card
		err := s.db.NewSelect().Table("users").Column("username", "wallet_address").Where("id = ?", userID).Scan(ctx, &c)
		return c, err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, domain.Errorf(domain.CodeUnauthorized, "the access token is invalid")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("read user %s: %w", userID, err)
	}
	return Principal{UserID: userID, Username: c.Username, Wallet: c.Wallet, AppID: appID, Admin: s.IsAdmin(c.Wallet),
		CSRFToken: csrf}, nil
}

// Forget drops what this instance remembers of a user (after a profile
// change), so that the next request reads it again.
func (s *Service) Forget(userID string) { s.cards.forget(userID) }

// StartSession creates a browser session for the user and returns the
// cookie value (a random token; only its hash is stored) and the session.
func (s *Service) StartSession(ctx context.Context, userID string) (string, Session, error) {
	token := randomToken()
	now := s.now()
	sess := Session{TokenHash: hashToken(token), UserID: userID, CSRFToken: randomToken(),
		CreatedAt: now, ExpiresAt: now.Add(SessionLifetime)}
	if _, err := s.db.NewInsert().Model(&sess).Exec(ctx); err != nil {
		return "", sess, fmt.Errorf("start a session for %s: %w", userID, err)
	}
	return token, sess, nil
}

// SessionPrincipal returns the caller of a session cookie, or
// UNAUTHORIZED when the session does not exist or has expired.
func (s *Service) SessionPrincipal(ctx context.Context, cookie string) (Principal, error) {
	hash := hashToken(cookie)
	now := s.now()
	sess, err := s.sessions.get(ctx, now, string(hash), func(ctx context.Context) (Session, error) {
		var sess Session
		err := s.db.NewSelect().Model(&sess).Where("token_hash = ?", hash).Scan(ctx)
		return sess, err
	})
	if err == nil && !now.Before(sess.ExpiresAt) {
		err = sql.ErrNoRows
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, domain.Errorf(domain.CodeUnauthorized, "the session has ended; sign in again")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("read a session: %w", err)
	}
	return s.principal(ctx, sess.UserID, "web", sess.CSRFToken)
}

// EndSession deletes a browser session (logout). Ending an unknown
// session is not an error.
func (s *Service) EndSession(ctx context.Context, cookie string) error {
	hash := hashToken(cookie)
	s.sessions.forget(string(hash))
	if _, err := s.db.NewDelete().Model((*Session)(nil)).Where("token_hash = ?", hash).Exec(ctx); err != nil {
		return fmt.Errorf("end a session: %w", err)
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
