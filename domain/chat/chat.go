// Package chat runs game chat rooms and direct messages: sending with
// validation and a per-sender rate limit, history pages, direct-message
// threads with unread counts, blocks, and the system messages other
// services post into a game's chat. Game messages reach the room as the
// game event game:chat:message; direct messages reach both users' sockets
// as the personal notice chat:dm.
package chat

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/users"
)

// Context types.
const (
	ContextGame = "game"
	ContextDM   = "dm"
)

// Roles of game messages.
const (
	RolePlayer    = "player"
	RoleSpectator = "spectator"
	RoleSystem    = "system"
)

// Events and Notices are this package's room events and personal notices
// by name, each with its data type (see rules.Events): a game chat
// message (domain.EventChatMessage) and a direct message (domain.NoticeDM).
var (
	Events  = map[domain.EventName]any{domain.EventChatMessage: Message{}}
	Notices = map[domain.NoticeKind]any{domain.NoticeDM: Message{}}
)

// The rate limit: at most RateLimit messages per RateWindow per sender,
// counted over the stored messages so that it holds across instances.
const (
	RateLimit  = 5
	RateWindow = 10 * time.Second
)

// Message is a chat message as clients see it.
type Message struct {
	ID          string         `json:"id" doc:"increasing number as a string; pass it as ?before= for older messages"`
	Context     Context        `json:"context"`
	Sender      *UserRef       `json:"sender" doc:"null for system messages"`
	RecipientID string         `json:"recipientId,omitempty" doc:"direct messages: who the message is for"`
	Text        string         `json:"text" doc:"as typed (not HTML-escaped): escape it when rendering"`
	CreatedAt   time.Time      `json:"createdAt"`
	Metadata    map[string]any `json:"metadata" doc:"game messages: role (player, spectator or system); system messages may add kind, amountMinor..."`
}

// Context is where a message was posted.
type Context struct {
	Type string `json:"type" enum:"game,dm" doc:"game or dm"`
	ID   string `json:"id" doc:"the game id; for dm the other user's id, seen from whoever reads it"`
}

// UserRef names a user.
type UserRef struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
}

// row is a stored message (with its sender's username when read).
type row struct {
	bun.BaseModel `bun:"table:chat_messages,alias:m"`

	ID          int64           `bun:"id,pk,autoincrement"`
	ContextType string          `bun:"context_type"`
	ContextID   string          `bun:"context_id"`
	SenderID    *string         `bun:"sender_id,type:uuid"`
	RecipientID *string         `bun:"recipient_id,type:uuid"`
	Text        string          `bun:"text"`
	Role        *string         `bun:"role"`
	Metadata    json.RawMessage `bun:"metadata,type:jsonb"`
	CreatedAt   time.Time       `bun:"created_at"`

	SenderName *string `bun:"sender_name,scanonly"`
}

// messageFor renders a stored message for viewer: a direct message's
// context id is the other user from the viewer's side, so that it is the
// id to put in /chat/dm/:id/messages.
func (r row) messageFor(viewer string) Message {
	m := Message{ID: strconv.FormatInt(r.ID, 10), Context: Context{Type: r.ContextType, ID: r.ContextID},
		Text: r.Text, CreatedAt: r.CreatedAt.UTC(), Metadata: map[string]any{}}
	if len(r.Metadata) > 0 {
		d := json.NewDecoder(bytes.NewReader(r.Metadata))
		d.UseNumber() // amounts stay integers
		_ = d.Decode(&m.Metadata)
	}
	if r.SenderID != nil {
		m.Sender = &UserRef{UserID: *r.SenderID}
		if r.SenderName != nil {
			m.Sender.Username = *r.SenderName
		}
	}
	if r.Role != nil {
		m.Metadata["role"] = *r.Role
	}
	if r.ContextType == ContextDM && r.SenderID != nil && r.RecipientID != nil {
		m.RecipientID = *r.RecipientID
		m.Context.ID = *r.RecipientID
		if viewer == *r.RecipientID {
			m.Context.ID = *r.SenderID
		}
	}
	return m
}

// Service runs chat.
type Service struct {
	db     *bun.DB
	events *eventlog.Log
	now    domain.Clock
}

// New returns a Service that posts game messages to their rooms' logs.
func New(bdb *bun.DB, events *eventlog.Log, now domain.Clock) *Service {
	return &Service{db: bdb, events: events, now: now}
}

// statusActive is the status of a game whose chat is open.
const statusActive = "active"

// CheckContextType returns VALIDATION_ERROR for field "type" unless t is
// game or dm.
func CheckContextType(t string) error {
	if t != ContextGame && t != ContextDM {
		return domain.Invalid(map[string]string{"type": "game or dm"})
	}
	return nil
}

// Send posts a message from senderID: into the chat of game contextID, or
// to user contextID when contextType is dm. The text is cleaned by
// CleanText. It returns VALIDATION_ERROR (bad type, bad text, a message to
// yourself), NOT_FOUND (no such game or user), GAME_NOT_ACTIVE (the game
// is not active), FORBIDDEN (one of the two users blocked the other) or
// RATE_LIMITED (more than RateLimit messages in RateWindow, with
// retryAfterSeconds).
func (s *Service) Send(ctx context.Context, senderID, contextType, contextID, text string) (Message, error) {
	if err := CheckContextType(contextType); err != nil {
		return Message{}, err
	}
	clean, err := CleanText(text)
	if err != nil {
		return Message{}, err
	}
	var msg Message
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		// One sender's messages go one at a time, so that concurrent
		// requests cannot all pass the count. Taken first, before any
		// game row, so that locks are always taken in the same order.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('chat_messages'), hashtext(?))", senderID); err != nil {
			return fmt.Errorf("lock the messages of sender %s: %w", senderID, err)
		}
		now := s.now() // after the lock: one sender's messages are stored in time order
		var err error
		if contextType == ContextGame {
			msg, err = s.sendToGame(ctx, tx, senderID, contextID, clean, now)
		} else {
			msg, err = s.sendDirect(ctx, tx, senderID, contextID, clean, now)
		}
		return err
	})
	return msg, err
}

func (s *Service) sendToGame(ctx context.Context, tx db.Tx, senderID, gameID, text string, now time.Time) (Message, error) {
	gameID, err := gameIDOf(gameID)
	if err != nil {
		return Message{}, err
	}
	// Locked like a move locks it, so a message never follows the game's
	// end in its event stream.
	var status string
	err = tx.NewSelect().Table("games").Column("status").Where("id = ?", gameID).For("UPDATE").Scan(ctx, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, domain.Errorf(domain.CodeNotFound, "no such game")
	} else if err != nil {
		return Message{}, fmt.Errorf("lock game %s: %w", gameID, err)
	}
	if status != statusActive {
		return Message{}, &domain.Error{Code: domain.CodeGameNotActive, Message: "the game is " + status + "; its chat is closed",
			Extra: map[string]any{"status": status}}
	}
	if err := checkRate(ctx, tx, senderID, now); err != nil {
		return Message{}, err
	}
	isPlayer, err := tx.NewSelect().Table("game_players").Where("game_id = ? AND user_id = ?", gameID, senderID).Exists(ctx)
	if err != nil {
		return Message{}, fmt.Errorf("check whether %s plays game %s: %w", senderID, gameID, err)
	}
	role := RoleSpectator
	if isPlayer {
		role = RolePlayer
	}
	name, err := usernameOf(ctx, tx, senderID)
	if err != nil {
		return Message{}, err
	}
	r := row{ContextType: ContextGame, ContextID: gameID, SenderID: &senderID, Text: text, Role: &role,
		Metadata: json.RawMessage(`{}`), CreatedAt: now, SenderName: &name}
	return s.postToGame(ctx, tx, r)
}

// PostSystem posts a system message (no sender, role system) into a
// game's chat inside the caller's transaction, with its game:chat:message
// event; extra metadata (kind, amountMinor...) is kept except a "role"
// member. It returns VALIDATION_ERROR for an empty or too long text and
// NOT_FOUND when there is no such game; the game's status is the caller's
// business.
func (s *Service) PostSystem(ctx context.Context, tx db.Tx, gameID, text string, metadata map[string]any, now time.Time) (Message, error) {
	clean, err := CleanText(text)
	if err != nil {
		return Message{}, err
	}
	if gameID, err = gameIDOf(gameID); err != nil {
		return Message{}, err
	}
	extra := make(map[string]any, len(metadata))
	for k, v := range metadata {
		if k != "role" {
			extra[k] = v
		}
	}
	meta, err := json.Marshal(extra)
	if err != nil {
		return Message{}, fmt.Errorf("encode the metadata of a system message of game %s: %w", gameID, err)
	}
	role := RoleSystem
	r := row{ContextType: ContextGame, ContextID: gameID, Text: clean, Role: &role, Metadata: meta, CreatedAt: now}
	return s.postToGame(ctx, tx, r)
}

// PostDirectSystem posts a system message (role system) into the
// conversation of senderID and recipientID inside the caller's
// transaction: it announces something senderID did there (a tip), so it
// keeps both ends, and both users' sockets hear of it as chat:dm. Extra
// metadata is kept except a "role" member. It returns the message as
// senderID sees it, VALIDATION_ERROR for an empty or too long text or the
// same user twice; whether the two may talk is the caller's business.
func (s *Service) PostDirectSystem(ctx context.Context, tx db.Tx, senderID, recipientID, text string, metadata map[string]any, now time.Time) (Message, error) {
	clean, err := CleanText(text)
	if err != nil {
		return Message{}, err
	}
	if senderID == recipientID {
		return Message{}, domain.Invalid(map[string]string{"id": "a conversation has two users"})
	}
	extra := make(map[string]any, len(metadata))
	for k, v := range metadata {
		if k != "role" {
			extra[k] = v
		}
	}
	meta, err := json.Marshal(extra)
	if err != nil {
		return Message{}, fmt.Errorf("encode the metadata of a system message from %s to %s: %w", senderID, recipientID, err)
	}
	name, err := usernameOf(ctx, tx, senderID)
	if err != nil {
		return Message{}, err
	}
	role := RoleSystem
	r := row{ContextType: ContextDM, ContextID: pairKey(senderID, recipientID), SenderID: &senderID, RecipientID: &recipientID,
		Text: clean, Role: &role, Metadata: meta, CreatedAt: now, SenderName: &name}
	return s.storeDirect(ctx, tx, r)
}

// EitherBlocked reports whether one of the two users has blocked the
// other (what stops direct messages, and anything else between them).
func (s *Service) EitherBlocked(ctx context.Context, a, b string) (bool, error) {
	return users.EitherBlocked(ctx, s.db, a, b)
}

// postToGame stores a game message and appends its event.
func (s *Service) postToGame(ctx context.Context, tx db.Tx, r row) (Message, error) {
	if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
		return Message{}, fmt.Errorf("store a chat message of game %s: %w", r.ContextID, err)
	}
	msg := r.messageFor("")
	_, err := s.events.Append(ctx, tx, domain.GameStreamOf(r.ContextID), r.CreatedAt, domain.Event{Name: domain.EventChatMessage, Data: msg})
	if errors.Is(err, eventlog.ErrNoRoom) {
		return Message{}, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	return msg, err
}

func (s *Service) sendDirect(ctx context.Context, tx db.Tx, senderID, otherID, text string, now time.Time) (Message, error) {
	otherID, err := otherUser(senderID, otherID)
	if err != nil {
		return Message{}, err
	}
	name, err := usernameOf(ctx, tx, senderID)
	if err != nil {
		return Message{}, err
	}
	if _, err := usernameOf(ctx, tx, otherID); err != nil {
		return Message{}, err
	}
	if blocked, err := users.EitherBlocked(ctx, tx, senderID, otherID); err != nil {
		return Message{}, err
	} else if blocked {
		return Message{}, domain.Errorf(domain.CodeForbidden, "you cannot message this user: one of you has blocked the other")
	}
	if err := checkRate(ctx, tx, senderID, now); err != nil {
		return Message{}, err
	}
	r := row{ContextType: ContextDM, ContextID: pairKey(senderID, otherID), SenderID: &senderID, RecipientID: &otherID,
		Text: text, Metadata: json.RawMessage(`{}`), CreatedAt: now, SenderName: &name}
	return s.storeDirect(ctx, tx, r)
}

// storeDirect stores a direct message; both users' sockets hear of it
// (the sender's other tabs too), each seeing the conversation from their
// side.
func (s *Service) storeDirect(ctx context.Context, tx db.Tx, r row) (Message, error) {
	if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
		return Message{}, fmt.Errorf("store a direct message from %s to %s: %w", *r.SenderID, *r.RecipientID, err)
	}
	for _, to := range []string{*r.RecipientID, *r.SenderID} {
		if err := s.events.Tell(tx, to, domain.NoticeDM, r.messageFor(to)); err != nil {
			return Message{}, err
		}
	}
	return r.messageFor(*r.SenderID), nil
}

// checkRate returns RATE_LIMITED when the sender has posted RateLimit
// messages within RateWindow before now.
func checkRate(ctx context.Context, idb bun.IDB, senderID string, now time.Time) error {
	var recent []time.Time
	err := idb.NewSelect().Model((*row)(nil)).Column("created_at").
		// Announcements of a sender's tips are not messages they typed.
		Where("sender_id = ? AND created_at > ? AND role IS DISTINCT FROM 'system'", senderID, now.Add(-RateWindow)).
		OrderExpr("created_at DESC").Limit(RateLimit).Scan(ctx, &recent)
	if err != nil {
		return fmt.Errorf("read the recent messages of sender %s: %w", senderID, err)
	}
	if len(recent) < RateLimit {
		return nil
	}
	wait := int(math.Ceil(recent[RateLimit-1].Add(RateWindow).Sub(now).Seconds()))
	wait = max(wait, 1)
	return domain.Errorf(domain.CodeRateLimited, "at most %d messages per %d seconds; try again in %d s",
		RateLimit, int(RateWindow.Seconds()), wait).With("retryAfterSeconds", wait)
}

// gameIDOf returns the canonical form of a game id, or NOT_FOUND.
func gameIDOf(id string) (string, error) {
	id, ok := domain.CanonicalID(id)
	if !ok {
		return "", domain.Errorf(domain.CodeNotFound, "no such game")
	}
	return id, nil
}

// otherUser returns the canonical form of the other user's id: NOT_FOUND
// when it is no id, VALIDATION_ERROR when it is the user's own.
func otherUser(userID, otherID string) (string, error) {
	id, ok := domain.CanonicalID(otherID)
	if !ok {
		return "", domain.Errorf(domain.CodeNotFound, "no such user")
	}
	if id == userID {
		return "", domain.Invalid(map[string]string{"id": "that is you: direct messages go to another user"})
	}
	return id, nil
}

// pairKey is a conversation's context id: the two user ids, smaller first.
func pairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + ":" + b
}

func usernameOf(ctx context.Context, idb bun.IDB, userID string) (string, error) {
	var name string
	err := idb.NewSelect().Table("users").Column("username").Where("id = ?", userID).Scan(ctx, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", domain.Errorf(domain.CodeNotFound, "no such user")
	}
	if err != nil {
		return "", fmt.Errorf("read the username of user %s: %w", userID, err)
	}
	return name, nil
}
