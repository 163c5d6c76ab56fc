// Package users owns user accounts and public profiles.
package users

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
)

// User is an account, identified by the wallet that signed in.
type User struct {
	bun.BaseModel `bun:"table:users"`

	ID            string    `bun:"id,pk,type:uuid,default:gen_random_uuid()"`
	WalletAddress string    `bun:"wallet_address"`
	Username      string    `bun:"username"`
	DisplayName   string    `bun:"display_name"`
	Bio           string    `bun:"bio"`
	AvatarImageID *string   `bun:"avatar_image_id,type:uuid"`
	CoverImageID  *string   `bun:"cover_image_id,type:uuid"`
	CreatedAt     time.Time `bun:"created_at"`
	UpdatedAt     time.Time `bun:"updated_at"`
	Bot           bool      `bun:"bot"` // a demo player run by the server
	// BotAccount: the account declared itself a bot (DeclareBot), or is a
	// demo bot.
	BotAccount bool `bun:"bot_account"`
	// SignedInAt is the latest sign-in, PreviousSignInAt the one before it
	// (nil: none).
	SignedInAt       *time.Time `bun:"signed_in_at"`
	PreviousSignInAt *time.Time `bun:"previous_sign_in_at"`
}

// Limits of the profile fields.
const (
	MaxUsername    = 20
	MaxDisplayName = 40
	MaxBio         = 280
	MinSearch      = 2
	MaxSearch      = 20
)

var usernameRE = regexp.MustCompile(`^[a-z0-9_]{3,20}$`)

// usernameChars matches text made only of the characters usernames have
// (chosen or generated): a name or prefix with any other matches no user.
var usernameChars = regexp.MustCompile(`^[a-z0-9_]+$`)

// Service reads and changes users.
type Service struct {
	db  *bun.DB
	now domain.Clock
}

// New returns a Service.
func New(bdb *bun.DB, now domain.Clock) *Service { return &Service{db: bdb, now: now} }

// ByID returns the user with the given id, or NOT_FOUND.
func (s *Service) ByID(ctx context.Context, id string) (User, error) {
	canonical, ok := domain.CanonicalID(id)
	if !ok {
		return User{}, domain.Errorf(domain.CodeNotFound, "no user with id %q", id)
	}
	return s.one(ctx, "id = ?", canonical)
}

// ByUsername returns the user with the given username (any case), or
// NOT_FOUND.
func (s *Service) ByUsername(ctx context.Context, username string) (User, error) {
	username = strings.ToLower(username)
	if !usernameChars.MatchString(username) {
		return User{}, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	return s.one(ctx, "username = ?", username)
}

func (s *Service) one(ctx context.Context, where string, arg any) (User, error) {
	var u User
	err := s.db.NewSelect().Model(&u).Where(where, arg).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	if err != nil {
		return User{}, fmt.Errorf("read user %v: %w", arg, err)
	}
	return u, nil
}

// Search returns up to MaxSearch users whose username starts with prefix
// (case-insensitive), shortest names first. The prefix must have at least
// MinSearch characters.
func (s *Service) Search(ctx context.Context, prefix string) ([]User, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if utf8.RuneCountInString(prefix) < MinSearch {
		return nil, domain.Invalid(map[string]string{"username": "type at least 2 characters"})
	}
	if utf8.RuneCountInString(prefix) > 20 || !usernameChars.MatchString(prefix) {
		return []User{}, nil // no username is that long or has other characters
	}
	escaped := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix)
	users := []User{}
	err := s.db.NewSelect().Model(&users).
		Where("username LIKE ?", escaped+"%").
		OrderExpr("length(username), username").Limit(MaxSearch).Scan(ctx)
	if err != nil {
		return users, fmt.Errorf("search users by the prefix %q: %w", prefix, err)
	}
	return users, nil
}

// ProfileUpdate is a change of profile; nil fields stay as they are.
type ProfileUpdate struct {
	Username    *string
	DisplayName *string
	Bio         *string
}

// UpdateProfile validates and applies a profile change. It returns
// VALIDATION_ERROR naming each bad field and CONFLICT when the username is
// taken.
func (s *Service) UpdateProfile(ctx context.Context, userID string, p ProfileUpdate) (User, error) {
	v := domain.Validator{}
	q := s.db.NewUpdate().Model((*User)(nil)).Where("id = ?", userID).Set("updated_at = ?", s.now())
	if p.Username != nil {
		name := strings.ToLower(v.Text("username", *p.Username, false, MaxUsername))
		v.Check(usernameRE.MatchString(name), "username", "3 to 20 characters: letters a-z, digits and _")
		q = q.Set("username = ?", name)
	}
	if p.DisplayName != nil {
		q = q.Set("display_name = ?", v.Text("displayName", *p.DisplayName, false, MaxDisplayName))
	}
	if p.Bio != nil {
		q = q.Set("bio = ?", v.Text("bio", *p.Bio, true, MaxBio))
	}
	if err := v.Err(); err != nil {
		return User{}, err
	}
	var u User
	if _, err := q.Returning("*").Exec(ctx, &u); err != nil {
		if db.IsUniqueViolation(err, "users_username_key") {
			e := domain.Errorf(domain.CodeConflict, "that username is taken")
			e.Fields = map[string]string{"username": "already taken"}
			return User{}, e
		}
		return User{}, fmt.Errorf("update the profile of user %s: %w", userID, err)
	}
	if u.ID == "" {
		return User{}, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	return u, nil
}

// FindOrCreate returns the user of a wallet, creating it with a generated
// unique username on first sign-in. It runs inside the caller's
// transaction.
func FindOrCreate(ctx context.Context, tx db.Tx, wallet string, now time.Time) (User, bool, error) {
	var u User
	err := tx.NewSelect().Model(&u).Where("wallet_address = ?", wallet).Scan(ctx)
	if err == nil {
		return u, false, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return User{}, false, fmt.Errorf("read the user of wallet %s: %w", wallet, err)
	}
	for attempt := 0; ; attempt++ {
		u = User{WalletAddress: wallet, Username: generateUsername(attempt), CreatedAt: now, UpdatedAt: now}
		// ON CONFLICT DO NOTHING keeps the transaction usable when the
		// generated name (or the wallet, in a race) is already taken.
		res, err := tx.NewInsert().Model(&u).On("CONFLICT DO NOTHING").Returning("*").Exec(ctx)
		if err != nil {
			return User{}, false, fmt.Errorf("create the user of wallet %s: %w", wallet, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return u, true, nil
		}
		var existing User
		err = tx.NewSelect().Model(&existing).Where("wallet_address = ?", wallet).Scan(ctx)
		if err == nil {
			return existing, false, nil // created concurrently
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return User{}, false, fmt.Errorf("read the user of wallet %s: %w", wallet, err)
		}
		if attempt > 20 {
			return User{}, false, errors.New("could not generate a unique username")
		}
	}
}

// SignedIn records a sign-in of userID at now, in the caller's
// transaction: the sign-in before it becomes the previous one.
func SignedIn(ctx context.Context, tx db.Tx, userID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, "UPDATE users SET previous_sign_in_at = signed_in_at, signed_in_at = ? WHERE id = ?", now, userID); err != nil {
		return fmt.Errorf("record the sign-in of %s: %w", userID, err)
	}
	return nil
}

// DeclareBot marks userID's account a bot, for good (declaring it again
// changes nothing), and returns the account.
func (s *Service) DeclareBot(ctx context.Context, userID string) (User, error) {
	var u User
	err := s.db.NewUpdate().Model(&u).Set("bot_account = true").Where("id = ?", userID).Returning("*").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	if err != nil {
		return User{}, fmt.Errorf("declare %s a bot: %w", userID, err)
	}
	return u, nil
}

var (
	adjectives = []string{"swift", "bold", "lucky", "calm", "clever", "brave", "quiet", "wild", "sly", "keen",
		"sunny", "rapid", "noble", "fuzzy", "cosmic", "steady", "daring", "merry", "witty", "zesty"}
	nouns = []string{"fox", "otter", "hawk", "tiger", "panda", "falcon", "badger", "lynx", "raven", "shark",
		"wolf", "heron", "koala", "bison", "gecko", "moose", "orca", "puma", "yak", "whale"}
)

// generateUsername returns a readable random name; later attempts get more
// digits so collisions die out quickly.
func generateUsername(attempt int) string {
	pick := func(n int) int {
		i, _ := rand.Int(rand.Reader, big.NewInt(int64(n)))
		return int(i.Int64())
	}
	digits := 3 + min(attempt/3, 5)
	max := 1
	for range digits {
		max *= 10
	}
	num := pick(max)
	s := adjectives[pick(len(adjectives))] + "_" + nouns[pick(len(nouns))]
	d := []byte{}
	for range digits {
		d = append([]byte{byte('0' + num%10)}, d...)
		num /= 10
	}
	return (s + string(d))[:min(20, len(s)+len(d))]
}

// EitherBlocked reports whether a has blocked b or b has blocked a: then
// neither may reach the other (friend requests, messages, challenges,
// tips), read in idb (a transaction of the caller's, or the database).
func EitherBlocked(ctx context.Context, idb bun.IDB, a, b string) (bool, error) {
	blocked, err := idb.NewSelect().Table("user_blocks").
		Where("(blocker_id = ? AND blocked_id = ?) OR (blocker_id = ? AND blocked_id = ?)", a, b, b, a).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("check the blocks between %s and %s: %w", a, b, err)
	}
	return blocked, nil
}
