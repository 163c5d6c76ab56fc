// Package notify stores users' notifications and pushes each new one to
// the user's open sockets on every instance. Every feature that tells a
// user something (a friend request, a challenge, a finished game, an
// achievement, and later tips, rewards, bets and markets) does it through
// Send, inside the transaction of what happened.
package notify

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
	"wager/domain/room"
)

// Notification types.
const (
	FriendRequest  = "friend_request"
	FriendAccepted = "friend_accepted"
	Challenge      = "challenge"
	GameCompleted  = "game_completed"
	Tip            = "tip"
	Achievement    = "achievement"
	ReferralReward = "referral_reward"
	SupportReply   = "support_reply"
	BetSettled     = "bet_settled"
	MarketResolved = "market_resolved"
)

// Notice is the socket notice that carries a new notification.
const Notice = "notification"

// Notification is one thing a user was told.
type Notification struct {
	bun.BaseModel `bun:"table:notifications"`

	ID        int64           `bun:"id,pk,autoincrement" json:"id"`
	UserID    string          `bun:"user_id,type:uuid" json:"-"`
	Type      string          `bun:"type" json:"type" doc:"friend_request, friend_accepted, challenge, game_completed, tip, achievement, referral_reward, support_reply, bet_settled, market_resolved"`
	Data      json.RawMessage `bun:"data,type:jsonb" json:"data" type:"object" doc:"depends on the type"`
	Read      bool            `bun:"read" json:"read"`
	CreatedAt time.Time       `bun:"created_at" json:"createdAt"`
}

// Service stores and delivers notifications.
type Service struct {
	db    *bun.DB
	rooms *room.Log
	now   domain.Clock
}

// New returns the notification service; rooms delivers to sockets.
func New(bdb *bun.DB, rooms *room.Log, now domain.Clock) *Service {
	return &Service{db: bdb, rooms: rooms, now: now}
}

// Send stores a notification of type typ for userID in the caller's
// transaction (ctx must be one of db.Transact's) and, once it commits,
// pushes it to the user's sockets as the notice "notification". data is a
// struct with json tags.
func (s *Service) Send(ctx context.Context, tx bun.IDB, userID, typ string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode the %s notification: %w", typ, err)
	}
	n := Notification{UserID: userID, Type: typ, Data: raw, CreatedAt: s.now()}
	// One statement: the count reads the table as it was before the insert
	// (this transaction's earlier notifications included), so the new one
	// is the + 1.
	var unread int
	if err := tx.QueryRowContext(ctx, `WITH n AS (
			INSERT INTO notifications (user_id, type, data, read, created_at) VALUES (?, ?, ?, false, ?) RETURNING id
		) SELECT n.id, (SELECT count(*) FROM notifications WHERE user_id = ? AND NOT read) + 1 FROM n`,
		userID, typ, string(raw), n.CreatedAt, userID).Scan(&n.ID, &unread); err != nil {
		return fmt.Errorf("store the %s notification of user %s: %w", typ, userID, err)
	}
	return s.rooms.Tell(ctx, userID, Notice, Pushed{Notification: n, UnreadCount: unread})
}

// Pushed is the data of the socket notice "notification": the new
// notification and how many of the user's are unread with it, so that a
// bell can show the count without asking.
type Pushed struct {
	Notification
	UnreadCount int `json:"unreadCount"`
}

// Page is one page of a user's notifications with the number unread.
type Page struct {
	Items  []Notification
	Unread int
}

// List returns a user's notifications newest first (only the unread ones
// when unreadOnly): at most limit older than the id before (0 for the
// newest), and how many are unread in all.
func (s *Service) List(ctx context.Context, userID string, unreadOnly bool, limit int, before int64) (Page, error) {
	p := Page{Items: []Notification{}}
	q := s.db.NewSelect().Model(&p.Items).Where("user_id = ?", userID).OrderExpr("id DESC").Limit(int64(limit))
	if unreadOnly {
		q = q.Where("NOT read")
	}
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return p, fmt.Errorf("read the notifications of user %s: %w", userID, err)
	}
	var err error
	p.Unread, err = s.Unread(ctx, userID)
	return p, err
}

// Unread counts a user's unread notifications.
func (s *Service) Unread(ctx context.Context, userID string) (int, error) {
	n, err := s.db.NewSelect().Table("notifications").Where("user_id = ? AND NOT read", userID).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count the unread notifications of user %s: %w", userID, err)
	}
	return int(n), nil
}

// MarkRead marks one of the user's notifications read and returns it;
// NOT_FOUND when it is not theirs.
func (s *Service) MarkRead(ctx context.Context, userID string, id int64) (Notification, error) {
	var n Notification
	err := s.db.NewUpdate().Model(&n).Set("read = true").Where("id = ? AND user_id = ?", id, userID).
		Returning("*").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return n, domain.Errorf(domain.CodeNotFound, "no such notification")
	}
	if err != nil {
		return n, fmt.Errorf("mark notification %d read: %w", id, err)
	}
	return n, nil
}

// ReadAll marks every unread notification of the user read and returns
// how many it changed.
func (s *Service) ReadAll(ctx context.Context, userID string) (int, error) {
	res, err := s.db.NewUpdate().Table("notifications").Set("read = true").
		Where("user_id = ? AND NOT read", userID).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("mark the notifications of user %s read: %w", userID, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
