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
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
	"wager/domain/referrals"
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
	ClientIP      string     `bun:"client_ip"`
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
	perIP    int
	// unlimited are the wallets exempt from perIP (Config.Unlimited).
	unlimited     map[string]bool
	unlimitedList []string

	mu      sync.Mutex
	revoked map[string]time.Time // access token ids signed out, until they expire
}

// Config configures a Service.
type Config struct {
	PublicURL    string // e.g. http://localhost:8080
	ChainID      string // e.g. localnet, devnet, mainnet
	AdminWallets []string
	JWTSecret    []byte
	// HandshakesPerIP limits sign-in challenges per client address in a
	// minute (AUTH_RATE_LIMIT); 0 is no limit.
	HandshakesPerIP int
	// Unlimited are wallets exempt from HandshakesPerIP, whose challenges
	// do not count towards it either: the demo bots', which sign in
	// through the API from the server's own address. Their limit per
	// wallet and client address still holds, so that anyone naming them
	// gains at most that many challenges, none of which they can sign.
	Unlimited []string
}

// New returns a Service.
func New(bdb *bun.DB, now domain.Clock, cfg Config) *Service {
	host := strings.TrimPrefix(strings.TrimPrefix(cfg.PublicURL, "https://"), "http://")
	host = strings.TrimSuffix(host, "/")
	admins := map[string]bool{}
	for _, w := range cfg.AdminWallets {
		admins[w] = true
	}
	unlimited, unlimitedList := map[string]bool{}, []string{}
	for _, w := range cfg.Unlimited {
		unlimited[w] = true
		unlimitedList = append(unlimitedList, w)
	}
	return &Service{db: bdb, now: now, Tokens: NewTokens(cfg.JWTSecret, now), domain: host,
		uri: cfg.PublicURL, chainID: cfg.ChainID, admins: admins, perIP: cfg.HandshakesPerIP, unlimited: unlimited,
		unlimitedList: unlimitedList, revoked: map[string]time.Time{}}
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

// Handshake limits: challenges per wallet address and per client address
// in any minute. The wallet's limit counts one client's requests: another
// client asking in the wallet's name cannot use up the owner's.
const (
	HandshakesPerWallet = 10
	handshakeWindow     = time.Minute
)

// Handshake issues a single-use challenge for the wallet and app to the
// client at clientIP. It returns VALIDATION_ERROR for a malformed address,
// and RATE_LIMITED (with retryAfterSeconds) past HandshakesPerWallet
// challenges for the wallet from this client, or the configured number
// from this client, in a minute (Config.Unlimited wallets excepted).
func (s *Service) Handshake(ctx context.Context, walletAddress, appID, clientIP string) (Challenge, error) {
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
		Nonce: base58.Encode(raw), WalletAddress: pk.String(), AppID: appID, ClientIP: clientIP,
		IssuedAt: now, ExpiresAt: now.Add(ChallengeLifetime),
	}
	c.Message = s.message(c)
	// Stored only while both limits allow it, in one statement, so that
	// instances share the counts.
	since := now.Add(-handshakeWindow)
	perIP := s.perIP
	if s.unlimited[c.WalletAddress] {
		perIP = 0
	}
	var stored []string
	err = s.db.NewRaw(`INSERT INTO auth_challenges (nonce, wallet_address, app_id, message, issued_at, expires_at, client_ip)
		SELECT ?, ?, ?, ?, ?, ?, ? WHERE
			(SELECT count(*) FROM auth_challenges WHERE wallet_address = ? AND client_ip = ? AND issued_at > ?) < ? AND
			(? = 0 OR (SELECT count(*) FROM auth_challenges WHERE client_ip = ? AND issued_at > ? AND wallet_address <> ALL(?)) < ?)
		RETURNING nonce`, c.Nonce, c.WalletAddress, c.AppID, c.Message, c.IssuedAt, c.ExpiresAt, c.ClientIP,
		c.WalletAddress, c.ClientIP, since, HandshakesPerWallet, perIP, c.ClientIP, since, pgdialect.Array(s.unlimitedList), perIP).Scan(ctx, &stored)
	if err != nil {
		return Challenge{}, fmt.Errorf("store a sign-in challenge: %w", err)
	}
	if len(stored) == 0 {
		return Challenge{}, s.handshakeLimited(ctx, c, since)
	}
	return c, nil
}

// handshakeLimited is the RATE_LIMITED answer of a refused handshake: which
// limit, and when the oldest challenge that counts leaves the window.
func (s *Service) handshakeLimited(ctx context.Context, c Challenge, since time.Time) error {
	var byWallet int
	var walletOldest, ipOldest time.Time
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM auth_challenges WHERE wallet_address = ? AND client_ip = ? AND issued_at > ?),
		coalesce((SELECT min(issued_at) FROM auth_challenges WHERE wallet_address = ? AND client_ip = ? AND issued_at > ?), ?),
		coalesce((SELECT min(issued_at) FROM auth_challenges WHERE client_ip = ? AND issued_at > ? AND wallet_address <> ALL(?)), ?)`,
		c.WalletAddress, c.ClientIP, since, c.WalletAddress, c.ClientIP, since, c.IssuedAt, c.ClientIP, since,
		pgdialect.Array(s.unlimitedList), c.IssuedAt).
		Scan(&byWallet, &walletOldest, &ipOldest)
	if err != nil {
		return fmt.Errorf("read the sign-in limits: %w", err)
	}
	what, oldest := fmt.Sprintf("%d sign-in requests a minute from one address", s.perIP), ipOldest
	if byWallet >= HandshakesPerWallet {
		what, oldest = fmt.Sprintf("%d sign-in requests a minute for one wallet from one address", HandshakesPerWallet), walletOldest
	}
	wait := max(int(math.Ceil(oldest.Add(handshakeWindow).Sub(c.IssuedAt).Seconds())), 1)
	return domain.Errorf(domain.CodeRateLimited, "at most %s; try again in %d s", what, wait).With("retryAfterSeconds", wait)
}

func (s *Service) message(c Challenge) string {
	return fmt.Sprintf("%s wants you to sign in with your Solana account:\n%s\n\n%s\n\nURI: %s\nVersion: 1\nChain ID: %s\nNonce: %s\nIssued At: %s\nExpiration Time: %s",
		s.domain, c.WalletAddress, Statement, s.uri, s.chainID, c.Nonce,
		c.IssuedAt.UTC().Format(time.RFC3339), c.ExpiresAt.UTC().Format(time.RFC3339))
}

// errBadLogin is the one answer to every failed login: it says nothing
// about which check failed.
var errBadLogin = domain.Errorf(domain.CodeUnauthorized,
	"the signature does not match a current sign-in challenge for this wallet; request a new one and sign it")

// Login verifies the detached ed25519 signature (base64) of an unused,
// unexpired challenge of the wallet and app (the one named by nonce when
// it is set), consumes it, creates the user on first sign-in and returns
// the user, recording the client address it signed in from. A new user
// gets a referral code and, when in.ReferralCode is someone else's code,
// that user as their referrer; at any later login the code is ignored. A
// failed login changes nothing. Every failure is 401 UNAUTHORIZED.
func (s *Service) Login(ctx context.Context, in SignIn) (users.User, error) {
	appID, nonce := in.AppID, in.Nonce
	if err := CheckAppID(appID); err != nil {
		return users.User{}, err
	}
	pk, err := solana.PublicKeyFromBase58(strings.TrimSpace(in.Address))
	if err != nil {
		return users.User{}, errBadLogin
	}
	sigBytes, err := decodeSignature(in.Signature)
	if err != nil {
		return users.User{}, errBadLogin
	}
	sig := solana.SignatureFromBytes(sigBytes)
	var u users.User
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		// Any unexpired, unused challenge of the wallet and app may be the
		// one signed: asking for challenges in someone's name takes
		// nothing from them.
		now := s.now()
		var open []Challenge
		q := tx.NewSelect().Model(&open).
			Where("wallet_address = ? AND app_id = ? AND consumed_at IS NULL AND expires_at > ?", pk.String(), appID, now)
		if nonce != "" {
			q = q.Where("nonce = ?", nonce)
		}
		if err := q.Order("issued_at DESC").Limit(100).Scan(ctx); err != nil {
			return fmt.Errorf("read the sign-in challenges of %s: %w", pk, err)
		}
		i := slices.IndexFunc(open, func(c Challenge) bool { return sig.Verify(pk, []byte(c.Message)) })
		if i < 0 {
			return errBadLogin
		}
		res, err := tx.NewUpdate().Model((*Challenge)(nil)).Set("consumed_at = ?", now).
			Where("nonce = ? AND consumed_at IS NULL", open[i].Nonce).Exec(ctx)
		if err != nil {
			return fmt.Errorf("consume a sign-in challenge: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errBadLogin // consumed by a concurrent login
		}
		var created bool
		if u, created, err = users.FindOrCreate(ctx, tx, pk.String(), now); err != nil {
			return err
		}
		if err := users.SignedIn(ctx, tx, u.ID, now); err != nil {
			return err
		}
		u.PreviousSignInAt, u.SignedInAt = u.SignedInAt, &now
		if in.ClientIP != "" {
			// Where accounts sign in from links them (LINK_BY_IP).
			if _, err := tx.ExecContext(ctx, `INSERT INTO sign_in_addresses (user_id, address, last_at) VALUES (?, ?, ?)
				ON CONFLICT (user_id, address) DO UPDATE SET last_at = EXCLUDED.last_at`, u.ID, in.ClientIP, now); err != nil {
				return fmt.Errorf("record where %s signed in from: %w", u.ID, err)
			}
		}
		if !created {
			return nil
		}
		if _, err := referrals.EnsureCode(ctx, tx, u.ID, now); err != nil {
			return err
		}
		return referrals.Join(ctx, tx, u.ID, in.ReferralCode)
	})
	return u, err
}

// SignInAddressKept is how long the address a user signed in from is
// kept: as long as it can link two accounts.
const SignInAddressKept = 30 * 24 * time.Hour

// SignIn is a wallet's sign-in: the signature of one of its challenges.
type SignIn struct {
	Address   string // the wallet, base58
	Signature string // base64 ed25519 signature of the challenge's message
	AppID     string
	Nonce     string // when set, only that challenge is checked
	// ReferralCode names the referrer of a new user (ignored when unknown
	// or for an existing user).
	ReferralCode string
	ClientIP     string // where the request came from, as the server trusts it
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
	// SignedInAt is when this sign-in happened: the access token's issue
	// time, or the browser session's start (the reality check counts from
	// it).
	SignedInAt time.Time
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
	if s.isRevoked(claims.ID) {
		return Principal{}, errSignedOut
	}
	return s.principal(ctx, claims.Subject, claims.App, "", issuedAt(claims))
}

// issuedAt is a token's issue time (Parse requires it).
func issuedAt(c Claims) time.Time {
	if c.IssuedAt == nil {
		return time.Time{}
	}
	return c.IssuedAt.UTC()
}

var errSignedOut = domain.Errorf(domain.CodeUnauthorized, "the access token was signed out; sign in again")

// AuthenticateQueryToken verifies a token passed in a URL (WebSocket
// clients cannot set headers); the token's own app id stands.
func (s *Service) AuthenticateQueryToken(ctx context.Context, token string) (Principal, error) {
	claims, err := s.Tokens.Parse(token)
	if err != nil {
		return Principal{}, err
	}
	if s.isRevoked(claims.ID) {
		return Principal{}, errSignedOut
	}
	return s.principal(ctx, claims.Subject, claims.App, "", issuedAt(claims))
}

func (s *Service) principal(ctx context.Context, userID, appID, csrf string, signedIn time.Time) (Principal, error) {
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
		CSRFToken: csrf, SignedInAt: signedIn}, nil
}

// Revocations is the NOTIFY channel of sign-outs: "token:<jti>" or
// "session:<hex of the cookie's hash>".
const Revocations = "auth_revoked"

// Logout revokes an access token until it expires: every instance refuses
// it from then on. Revoking it again changes nothing.
func (s *Service) Logout(ctx context.Context, token string) error {
	claims, err := s.Tokens.Parse(token)
	if err != nil {
		return err
	}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO revoked_tokens (jti, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
			claims.ID, claims.ExpiresAt.Time); err != nil {
			return fmt.Errorf("revoke an access token: %w", err)
		}
		return db.Notify(ctx, tx, Revocations, "token:"+claims.ID)
	})
	if err == nil {
		s.revoke(claims.ID, claims.ExpiresAt.Time)
	}
	return err
}

func (s *Service) revoke(jti string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked[jti] = until
}

func (s *Service) isRevoked(jti string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.revoked[jti]
	return ok
}

// Revoked takes a sign-out announced by another instance (a payload of
// Revocations).
func (s *Service) Revoked(payload string) {
	if jti, ok := strings.CutPrefix(payload, "token:"); ok {
		s.revoke(jti, s.now().Add(TokenLifetime))
	} else if hash, ok := strings.CutPrefix(payload, "session:"); ok {
		if raw, err := hex.DecodeString(hash); err == nil {
			s.sessions.forget(string(raw))
		}
	}
}

// LoadRevocations reads every revoked token that has not expired and
// forgets the sessions this instance remembers: what it may have missed
// while it did not listen. It runs at start and after every reconnection
// of the listener.
func (s *Service) LoadRevocations(ctx context.Context) error {
	var rows []struct {
		JTI       string    `bun:"jti"`
		ExpiresAt time.Time `bun:"expires_at"`
	}
	if err := s.db.NewSelect().Table("revoked_tokens").Column("jti", "expires_at").
		Where("expires_at > ?", s.now()).Scan(ctx, &rows); err != nil {
		return fmt.Errorf("read the revoked tokens: %w", err)
	}
	s.mu.Lock()
	s.revoked = make(map[string]time.Time, len(rows))
	for _, r := range rows {
		s.revoked[r.JTI] = r.ExpiresAt
	}
	s.mu.Unlock()
	s.sessions.clear()
	return nil
}

// DeleteExpired deletes the challenges, sessions and revocations that
// have expired and the sign-in addresses too old to link accounts, and
// forgets expired revocations here.
func (s *Service) DeleteExpired(ctx context.Context) error {
	now := s.now()
	for _, table := range []string{"auth_challenges", "sessions", "revoked_tokens"} {
		if _, err := s.db.ExecContext(ctx, "DELETE FROM "+table+" WHERE expires_at < ?", now); err != nil {
			return fmt.Errorf("delete the expired rows of %s: %w", table, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM sign_in_addresses WHERE last_at < ?", now.Add(-SignInAddressKept)); err != nil {
		return fmt.Errorf("delete old sign-in addresses: %w", err)
	}
	s.mu.Lock()
	for jti, until := range s.revoked {
		if until.Before(now) {
			delete(s.revoked, jti)
		}
	}
	s.mu.Unlock()
	return nil
}

// RunCleanup deletes what has expired every interval until ctx is done.
func (s *Service) RunCleanup(ctx context.Context, interval time.Duration, log *slog.Logger) {
	domain.Every(ctx, interval, log, "delete expired sign-in data", s.DeleteExpired)
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
	return s.principal(ctx, sess.UserID, "web", sess.CSRFToken, sess.CreatedAt.UTC())
}

// EndSession deletes a browser session (logout) and tells every instance
// to forget it. Ending an unknown session is not an error.
func (s *Service) EndSession(ctx context.Context, cookie string) error {
	hash := hashToken(cookie)
	s.sessions.forget(string(hash))
	return db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if _, err := tx.NewDelete().Model((*Session)(nil)).Where("token_hash = ?", hash).Exec(ctx); err != nil {
			return fmt.Errorf("end a session: %w", err)
		}
		return db.Notify(ctx, tx, Revocations, "session:"+hex.EncodeToString(hash))
	})
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
