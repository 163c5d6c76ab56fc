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

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
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
	ReviewHold     = "review_hold"
	// A tournament the user entered starts in a minute, and what it paid
	// them at its end.
	TournamentStarting = "tournament_starting"
	TournamentPrize    = "tournament_prize"
)

// Notices are this package's personal notices by name, each with its data
// type (see rules.Events): domain.NoticeNotification carries a new
// notification.
var Notices = map[domain.NoticeKind]any{domain.NoticeNotification: Pushed{}}

// Notification is one thing a user was told.
type Notification struct {
	bun.BaseModel `bun:"table:notifications"`

	ID        int64           `bun:"id,pk,autoincrement" json:"id,string" doc:"a sequence number as a string; pass the last one seen as ?before= for older ones"`
	UserID    string          `bun:"user_id,type:uuid" json:"-"`
	Type      string          `bun:"type" json:"type" enum:"friend_request,friend_accepted,challenge,game_completed,tip,achievement,referral_reward,support_reply,bet_settled,market_resolved,review_hold,tournament_starting,tournament_prize" doc:"friend_request, friend_accepted, challenge, game_completed, tip, achievement, referral_reward, support_reply, bet_settled, market_resolved, review_hold, tournament_starting, tournament_prize"`
	Data      json.RawMessage `bun:"data,type:jsonb" json:"data" type:"object" doc:"depends on the type"`
	Read      bool            `bun:"read" json:"read"`
	CreatedAt time.Time       `bun:"created_at" json:"createdAt"`
}

// Service stores and delivers notifications.
type Service struct {
	db     *bun.DB
	events *eventlog.Log
	now    domain.Clock
}

// New returns the notification service; events delivers to sockets.
func New(bdb *bun.DB, events *eventlog.Log, now domain.Clock) *Service {
	return &Service{db: bdb, events: events, now: now}
}

// Send stores a notification of type typ for userID in tx and, once it
// commits, pushes it to the user's sockets as the notice "notification".
// data is a struct with json tags.
func (s *Service) Send(ctx context.Context, tx db.Tx, userID, typ string, data any) error {
	return s.SendMany(ctx, tx, []Message{{UserID: userID, Type: typ, Data: data}})
}

// Message is one notification for SendMany: of type Type for UserID, with
// Data a struct with json tags.
type Message struct {
	UserID string
	Type   string
	Data   any
}

// SendMany stores several notifications in the caller's transaction in one
// statement and, once it commits, pushes each to its user's sockets as
// Send does. Each push's unread count is the user's unread notifications
// before the statement plus the ones it stored for them, so two messages
// to one user both carry the count that includes both.
func (s *Service) SendMany(ctx context.Context, tx db.Tx, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	// Notifications of this transaction still queued (see Reserved) are
	// stored first, so that the counts below include them.
	known := db.Local[queue](tx)
	if known != nil && known.waiting(msgs) {
		if err := tx.Flush(ctx); err != nil {
			return err
		}
		known.flushed()
	}
	at := s.now()
	raws := make([][]byte, len(msgs))
	args := make([]any, 0, 4*len(msgs)+1)
	placeholders := ""
	for i, m := range msgs {
		raw, err := json.Marshal(m.Data)
		if err != nil {
			return fmt.Errorf("encode the %s notification: %w", m.Type, err)
		}
		raws[i] = raw
		if i > 0 {
			placeholders += ", "
		}
		placeholders += "(?::integer, ?::uuid, ?::text, ?::jsonb)"
		args = append(args, i, m.UserID, m.Type, string(raw))
	}
	args = append(args, at)
	// The ids are drawn in v, before the insert, so that each row read
	// back is known by its message's position. The counts read the table
	// as it was before the insert (this transaction's earlier
	// notifications included).
	rows, err := tx.QueryContext(ctx, `WITH v AS MATERIALIZED (
			SELECT nextval(pg_get_serial_sequence('notifications', 'id')) AS id, m.*
			FROM (VALUES `+placeholders+`) AS m (pos, user_id, type, data) ORDER BY m.pos
		), n AS (
			INSERT INTO notifications (id, user_id, type, data, read, created_at)
			SELECT id, user_id, type, data, false, ?::timestamptz FROM v
		)
		SELECT v.pos, v.id, (SELECT count(*) FROM notifications AS o WHERE o.user_id = v.user_id AND NOT o.read)
			+ count(*) OVER (PARTITION BY v.user_id)
		FROM v`, args...)
	if err != nil {
		return fmt.Errorf("store %d notifications: %w", len(msgs), err)
	}
	defer rows.Close()
	pushes := make([]Pushed, len(msgs))
	stored := 0
	for rows.Next() {
		var pos int
		var p Pushed
		if err := rows.Scan(&pos, &p.ID, &p.UnreadCount); err != nil {
			return fmt.Errorf("read the stored notifications: %w", err)
		}
		if pos < 0 || pos >= len(msgs) {
			return fmt.Errorf("read the stored notifications: no message %d", pos)
		}
		m := msgs[pos]
		p.UserID, p.Type, p.Data, p.CreatedAt = m.UserID, m.Type, raws[pos], at
		pushes[pos] = p
		stored++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the stored notifications: %w", err)
	}
	if stored != len(msgs) {
		return fmt.Errorf("stored %d of %d notifications", stored, len(msgs))
	}
	if known != nil {
		for _, m := range msgs {
			known.add(&known.stored, m.UserID, 1)
		}
	}
	for _, p := range pushes {
		if err := s.events.Tell(tx, p.UserID, domain.NoticeNotification, p); err != nil {
			return err
		}
	}
	return nil
}

// queue is what a transaction stored and queued of notifications, by
// user: the counts of the notices pushed for them follow it.
type queue struct {
	stored map[string]int // stored by a statement of the transaction
	queued map[string]int // queued with its writes, not stored yet
}

func (q *queue) add(m *map[string]int, userID string, n int) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[userID] += n
}

// waiting reports whether one of msgs' users has notifications queued.
func (q *queue) waiting(msgs []Message) bool {
	for _, m := range msgs {
		if q.queued[m.UserID] > 0 {
			return true
		}
	}
	return false
}

// flushed records that the queued notifications were stored (whoever
// sent the transaction's queued writes).
func (q *queue) flushed() {
	for u, n := range q.queued {
		q.add(&q.stored, u, n)
	}
	q.queued = nil
}

// Reserved is notifications whose ids, and their users' unread counts,
// were read in advance with other reads (see Reserve): they are stored
// with the transaction's queued writes, so that telling users costs no
// statement of its own.
type Reserved struct {
	s      *Service
	users  []string
	ids    []int64
	unread []int
	stored map[string]int // what the transaction had stored for each user when the counts were read
}

// Reserve adds to reads the ids of one notification for each of users,
// and their unread counts, for Send once reads have run in tx.
func (s *Service) Reserve(tx db.Tx, reads *db.Reads, users []string) *Reserved {
	r := &Reserved{s: s, users: users, stored: map[string]int{}}
	if q := db.Local[queue](tx); q != nil {
		for _, u := range users {
			r.stored[u] = q.stored[u]
		}
	}
	reads.Column(db.JSON(&r.ids), "SELECT json_agg(nextval(pg_get_serial_sequence('notifications', 'id'))) FROM generate_series(1, ?::integer)",
		len(users))
	reads.Column(db.JSON(&r.unread), `SELECT json_agg((SELECT count(*) FROM notifications AS o WHERE o.user_id = x.u AND NOT o.read) ORDER BY x.n)
		FROM unnest(?::uuid[]) WITH ORDINALITY AS x (u, n)`, users)
	return r
}

// Send queues msgs, one for each user reserved for in their order, with
// the transaction's writes (see db.Tx.Later) under the reserved ids and,
// once the transaction commits, pushes each to its user's sockets as
// SendMany does, with the same unread counts.
func (r *Reserved) Send(ctx context.Context, tx db.Tx, msgs []Message) error {
	if len(msgs) != len(r.users) || len(r.ids) != len(r.users) || len(r.unread) != len(r.users) {
		return fmt.Errorf("send %d notifications with %d reserved for %d users", len(msgs), len(r.ids), len(r.users))
	}
	q := db.Local[queue](tx)
	if q == nil {
		return db.ErrNoTransaction
	}
	at := r.s.now()
	batch := map[string]int{}
	for i, m := range msgs {
		if m.UserID != r.users[i] {
			return fmt.Errorf("send a notification to %s under the id reserved for %s", m.UserID, r.users[i])
		}
		batch[m.UserID]++
	}
	pushes := make([]Pushed, len(msgs))
	args := make([]any, 0, 6*len(msgs))
	placeholders := ""
	for i, m := range msgs {
		raw, err := json.Marshal(m.Data)
		if err != nil {
			return fmt.Errorf("encode the %s notification: %w", m.Type, err)
		}
		if i > 0 {
			placeholders += ", "
		}
		placeholders += "(?, ?, ?, ?, false, ?)"
		args = append(args, r.ids[i], m.UserID, m.Type, string(raw), at)
		// Unread: the user's when the counts were read, and what this
		// transaction stored and queued for them since (this batch whole,
		// as SendMany counts it).
		u := m.UserID
		unread := r.unread[i] + q.stored[u] - r.stored[u] + q.queued[u] + batch[u]
		pushes[i] = Pushed{Notification: Notification{ID: r.ids[i], UserID: u, Type: m.Type, Data: raw, CreatedAt: at}, UnreadCount: unread}
	}
	if err := tx.Later("INSERT INTO notifications (id, user_id, type, data, read, created_at) VALUES "+placeholders, args...); err != nil {
		return fmt.Errorf("store %d notifications: %w", len(msgs), err)
	}
	for u, n := range batch {
		q.add(&q.queued, u, n)
	}
	for _, p := range pushes {
		if err := r.s.events.Tell(tx, p.UserID, domain.NoticeNotification, p); err != nil {
			return err
		}
	}
	return nil
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
