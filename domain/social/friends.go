// Package social holds what users do with each other beyond a game:
// friendships (mutual, by request and acceptance, stopped by blocks) with
// who is online or playing, achievements (earned once, in the transaction
// of what earned them) and the public activity feed.
package social

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/notify"
	"wager/domain/users"
)

// Friendship statuses as the API answers them.
const (
	StatusPending = "pending"
	StatusFriends = "friends"
)

// Online tells which users hold an open socket on any instance.
type Online interface {
	Online(ctx context.Context, userIDs []string) (map[string]bool, error)
}

// Service runs friendships.
type Service struct {
	db     *bun.DB
	notify *notify.Service
	events *eventlog.Log // pushes the activity feed
	online Online
	now    domain.Clock
}

// New returns the social service.
func New(bdb *bun.DB, n *notify.Service, events *eventlog.Log, online Online, now domain.Clock) *Service {
	return &Service{db: bdb, notify: n, events: events, online: online, now: now}
}

// Relation is where a user stands with another.
type Relation struct {
	UserID string `json:"userId"`
	Status string `json:"status" enum:"pending,friends" doc:"pending (your request waits) or friends"`
}

// FriendNotice is the data of friend_request and friend_accepted
// notifications: who asked or accepted.
type FriendNotice struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
}

// Request asks to befriend to. When to had already asked from, it accepts
// instead; asking again answers the current relation. created reports a
// new request, which notifies to at most once per RequestNoticeEvery.
// Errors: VALIDATION_ERROR (yourself), NOT_FOUND (no such user), FORBIDDEN
// (a block either way).
func (s *Service) Request(ctx context.Context, from, to string) (r Relation, created bool, err error) {
	to, ok := domain.CanonicalID(to)
	if !ok {
		return r, false, errNoUser
	}
	if from == to {
		return r, false, domain.Invalid(map[string]string{"userId": "you cannot befriend yourself"})
	}
	r.UserID = to
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		created = false
		names, err := lockPair(ctx, tx, from, to)
		if err != nil {
			return err
		}
		if blocked, err := users.EitherBlocked(ctx, tx, from, to); err != nil {
			return err
		} else if blocked {
			return domain.Errorf(domain.CodeForbidden, "you cannot befriend this user: one of you has blocked the other")
		}
		if friends, err := areFriends(ctx, tx, from, to); err != nil || friends {
			r.Status = StatusFriends
			return err
		}
		// Their request waiting for me: asking back accepts it.
		if res, err := tx.NewDelete().Table("friend_requests").Where("from_id = ? AND to_id = ?", to, from).Exec(ctx); err != nil {
			return err
		} else if n, _ := res.RowsAffected(); n == 1 {
			r.Status = StatusFriends
			return s.befriend(ctx, tx, from, to, names[from])
		}
		res, err := tx.NewRaw(`INSERT INTO friend_requests (from_id, to_id, created_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, from, to, s.now()).Exec(ctx)
		if err != nil {
			return err
		}
		r.Status = StatusPending
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		created = true
		if due, err := s.noticeDue(ctx, tx, from, to); err != nil || !due {
			return err
		}
		return s.notify.Send(ctx, tx, to, notify.FriendRequest, FriendNotice{UserID: from, Username: names[from]})
	})
	if err != nil {
		return r, false, fmt.Errorf("friend request from %s to %s: %w", from, to, err)
	}
	return r, created, nil
}

// RequestNoticeEvery is how often at most a user is notified of friend
// requests from one other user: asking, withdrawing and asking again does
// not notify again meanwhile (the request itself still stands).
const RequestNoticeEvery = 24 * time.Hour

// noticeDue reports whether a new request of from to to notifies to, and
// if so records that it does (the pair is locked by the caller).
func (s *Service) noticeDue(ctx context.Context, tx db.Tx, from, to string) (bool, error) {
	now := s.now()
	res, err := tx.NewRaw(`INSERT INTO friend_request_notices AS n (from_id, to_id, notified_at) VALUES (?, ?, ?)
		ON CONFLICT (from_id, to_id) DO UPDATE SET notified_at = EXCLUDED.notified_at WHERE n.notified_at <= ?`,
		from, to, now, now.Add(-RequestNoticeEvery)).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("record the friend request notice of %s to %s: %w", from, to, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Accept accepts the pending request of from to me. NOT_FOUND when there
// is none.
func (s *Service) Accept(ctx context.Context, me, from string) (Relation, error) {
	from, ok := domain.CanonicalID(from)
	if !ok {
		return Relation{}, errNoRequest
	}
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		names, err := lockPair(ctx, tx, me, from)
		if errors.Is(err, errNoUser) {
			return errNoRequest
		} else if err != nil {
			return err
		}
		res, err := tx.NewDelete().Table("friend_requests").Where("from_id = ? AND to_id = ?", from, me).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoRequest
		}
		return s.befriend(ctx, tx, me, from, names[me])
	})
	if err != nil {
		return Relation{}, fmt.Errorf("accept the friend request of %s to %s: %w", from, me, err)
	}
	return Relation{UserID: from, Status: StatusFriends}, nil
}

// befriend makes a and b friends (b had asked a), tells b, and gives
// either the social achievement at SocialFriends friends.
func (s *Service) befriend(ctx context.Context, tx db.Tx, a, b, nameA string) error {
	now := s.now()
	if _, err := tx.NewRaw(`INSERT INTO friends (user_id, friend_id, since) VALUES (?, ?, ?), (?, ?, ?)
		ON CONFLICT DO NOTHING`, a, b, now, b, a, now).Exec(ctx); err != nil {
		return err
	}
	if err := s.notify.Send(ctx, tx, b, notify.FriendAccepted, FriendNotice{UserID: a, Username: nameA}); err != nil {
		return err
	}
	for _, u := range []string{a, b} {
		n, err := tx.NewSelect().Table("friends").Where("user_id = ?", u).Count(ctx)
		if err != nil {
			return err
		}
		if n >= SocialFriends {
			if _, err := s.Unlock(ctx, tx, u, SocialButter); err != nil {
				return err
			}
		}
	}
	return nil
}

// Remove ends a friendship between me and other (for both), withdraws my
// request to them or declines theirs. Nothing to end is not an error.
// NOT_FOUND when there is no such user.
func (s *Service) Remove(ctx context.Context, me, other string) error {
	other, ok := domain.CanonicalID(other)
	if !ok {
		return errNoUser
	}
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if _, err := lockPair(ctx, tx, me, other); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Table("friends").
			Where("(user_id = ? AND friend_id = ?) OR (user_id = ? AND friend_id = ?)", me, other, other, me).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Table("friend_requests").
			Where("(from_id = ? AND to_id = ?) OR (from_id = ? AND to_id = ?)", me, other, other, me).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("end the friendship of %s and %s: %w", me, other, err)
	}
	return nil
}

var (
	errNoUser    = domain.Errorf(domain.CodeNotFound, "no such user")
	errNoRequest = domain.Errorf(domain.CodeNotFound, "no pending friend request from this user")
)

// lockPair locks both users' rows, always in the same order so that two
// people asking each other at once cannot deadlock, and returns their
// usernames. NOT_FOUND when either does not exist.
func lockPair(ctx context.Context, tx db.Tx, a, b string) (map[string]string, error) {
	var rows []struct {
		ID       string `bun:"id"`
		Username string `bun:"username"`
	}
	err := tx.NewSelect().Table("users").Column("id", "username").Where("id IN (?, ?)", a, b).
		Order("id").For("UPDATE").Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	if len(rows) != 2 {
		return nil, errNoUser
	}
	names := map[string]string{}
	for _, r := range rows {
		names[r.ID] = r.Username
	}
	return names, nil
}

// existing returns a user id in its canonical form; NOT_FOUND when no
// user has it.
func (s *Service) existing(ctx context.Context, userID string) (string, error) {
	userID, ok := domain.CanonicalID(userID)
	if !ok {
		return "", errNoUser
	}
	if exists, err := s.db.NewSelect().Table("users").Where("id = ?", userID).Exists(ctx); err != nil {
		return "", fmt.Errorf("read user %s: %w", userID, err)
	} else if !exists {
		return "", errNoUser
	}
	return userID, nil
}

func areFriends(ctx context.Context, idb bun.IDB, a, b string) (bool, error) {
	return idb.NewSelect().Table("friends").Where("user_id = ? AND friend_id = ?", a, b).Exists(ctx)
}

// Friend is one of a user's friends, with where they are now.
type Friend struct {
	UserID        string    `bun:"user_id" json:"userId"`
	Username      string    `bun:"username" json:"username"`
	Since         time.Time `bun:"since" json:"since"`
	Online        bool      `bun:"-" json:"online" doc:"has a live socket open"`
	CurrentGameID *string   `bun:"current_game_id" json:"currentGameId" doc:"the active game they play, or null"`
}

// Friends returns a user's friends, most recent friendship first: at most
// limit after the friend before (a user id from the previous page; ""
// for the first page). NOT_FOUND when there is no such user.
func (s *Service) Friends(ctx context.Context, userID string, limit int, before string) ([]Friend, error) {
	userID, err := s.existing(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := []Friend{}
	q := s.db.NewSelect().TableExpr("friends AS f").Join("JOIN users AS u ON u.id = f.friend_id").
		Join("LEFT JOIN user_presence AS p ON p.user_id = f.friend_id AND p.kind = 'game'").
		ColumnExpr("f.friend_id AS user_id, u.username, f.since, p.game_id AS current_game_id").
		Where("f.user_id = ?", userID).OrderExpr("f.since DESC, f.friend_id DESC").Limit(int64(limit))
	if before != "" {
		id, ok := domain.CanonicalID(before)
		if !ok {
			return nil, domain.Invalid(map[string]string{"before": "must be a user id from the previous page"})
		}
		q = q.Where("(f.since, f.friend_id) < (SELECT since, friend_id FROM friends WHERE user_id = ? AND friend_id = ?)", userID, id)
	}
	if err := q.Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read the friends of %s: %w", userID, err)
	}
	if len(out) == 0 {
		return out, nil
	}
	ids := make([]string, len(out))
	for i, f := range out {
		ids[i] = f.UserID
	}
	online, err := s.online.Online(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Online = online[out[i].UserID]
	}
	return out, nil
}

// Incoming is a friend request waiting for the user's answer.
type Incoming struct {
	UserID    string    `bun:"user_id" json:"userId"`
	Username  string    `bun:"username" json:"username"`
	CreatedAt time.Time `bun:"created_at" json:"createdAt"`
}

// IncomingRequests returns the requests waiting for me, newest first.
func (s *Service) IncomingRequests(ctx context.Context, me string, limit int) ([]Incoming, error) {
	out := []Incoming{}
	err := s.db.NewSelect().TableExpr("friend_requests AS r").Join("JOIN users AS u ON u.id = r.from_id").
		ColumnExpr("r.from_id AS user_id, u.username, r.created_at").Where("r.to_id = ?", me).
		OrderExpr("r.created_at DESC, r.from_id DESC").Limit(int64(limit)).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read the friend requests to %s: %w", me, err)
	}
	return out, nil
}
