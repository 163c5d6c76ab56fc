// Package support runs support tickets: a user opens a ticket with a
// first message, then the user and staff (admins) write to it in turn.
// A ticket is open while the user waits for an answer, answered once
// staff wrote last, and closed when either side closes it (nobody writes
// to a closed ticket). A staff answer notifies the user (support_reply)
// in the same transaction.
package support

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/audit"
	"wager/domain/notify"
)

// Ticket statuses.
const (
	StatusOpen     = "open"
	StatusAnswered = "answered"
	StatusClosed   = "closed"
)

// Message authors.
const (
	AuthorUser  = "user"
	AuthorStaff = "staff"
)

// Categories of tickets; CategoryOther is the default.
var Categories = []string{"account", "payment", "game", "other"}

// CategoryOther is the category of a ticket opened without one.
const CategoryOther = "other"

// Limits of what users write, in characters (runes) after cleaning.
const (
	MaxSubject = 120
	MaxText    = 5000
)

// Summary is a ticket without its messages, as lists show it.
type Summary struct {
	ID        string    `json:"id"`
	Subject   string    `json:"subject" doc:"as typed (not HTML-escaped)"`
	Category  string    `json:"category" enum:"account,payment,game,other"`
	GameID    *string   `json:"gameId" doc:"the game the ticket is about, null when none"`
	Status    string    `json:"status" enum:"open,answered,closed" doc:"open: waiting for staff; answered: staff wrote last; closed: nobody can write"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt" doc:"the last message or status change"`
}

// Message is one message of a ticket.
type Message struct {
	ID        string    `json:"id"`
	Author    string    `json:"author" enum:"user,staff"`
	Text      string    `json:"text" doc:"as typed (not HTML-escaped): escape it when rendering"`
	CreatedAt time.Time `json:"createdAt"`
}

// Ticket is a ticket with its messages, oldest first.
type Ticket struct {
	Summary
	Messages []Message `json:"messages"`
}

// UserRef names the user a ticket belongs to (staff views only).
type UserRef struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
}

// QueueItem is a line of the staff queue.
type QueueItem struct {
	Summary
	User         UserRef   `json:"user"`
	WaitingSince time.Time `json:"waitingSince" doc:"the user's first message since staff last wrote: the queue's order"`
}

// StaffTicket is a ticket as staff read it: with its user and messages.
type StaffTicket struct {
	Ticket
	User         UserRef   `json:"user"`
	WaitingSince time.Time `json:"waitingSince"`
}

// ReplyNotice is the data of a support_reply notification.
type ReplyNotice struct {
	TicketID string `json:"ticketId"`
	Subject  string `json:"subject"`
}

// NewTicket is what a user writes to open a ticket.
type NewTicket struct {
	Subject  string  `json:"subject" minLength:"1" maxLength:"120"`
	Message  string  `json:"message" minLength:"1" maxLength:"5000"`
	Category string  `json:"category,omitempty" enum:"account,payment,game,other" doc:"other when absent"`
	GameID   *string `json:"gameId,omitempty" doc:"a game the ticket is about; it must exist"`
}

// Clean returns the ticket as it is stored: texts cleaned (see
// domain.UserText), the category defaulted and the game id canonical. It
// returns VALIDATION_ERROR naming each invalid field; whether the game
// exists is checked when the ticket is stored.
func (n NewTicket) Clean() (NewTicket, error) {
	v := domain.Validator{}
	out := NewTicket{Category: n.Category}
	out.Subject = v.Text("subject", n.Subject, false, MaxSubject)
	v.Check(out.Subject != "", "subject", "1 to 120 characters")
	out.Message = v.Text("message", n.Message, true, MaxText)
	v.Check(out.Message != "", "message", "1 to 5000 characters")
	if out.Category == "" {
		out.Category = CategoryOther
	}
	v.Check(validCategory(out.Category), "category", "one of account, payment, game, other")
	if n.GameID != nil && *n.GameID != "" {
		id, ok := domain.CanonicalID(*n.GameID)
		v.Check(ok, "gameId", "no such game")
		out.GameID = &id
	}
	return out, v.Err()
}

// CleanText returns a message's text as it is stored, or VALIDATION_ERROR
// for field "text" (empty, longer than MaxText, or a refused character).
func CleanText(text string) (string, error) {
	v := domain.Validator{}
	clean := v.Text("text", text, true, MaxText)
	v.Check(clean != "", "text", "1 to 5000 characters")
	return clean, v.Err()
}

// ParseStatus reads a ?status= filter: "" (none) or a status. It returns
// VALIDATION_ERROR for field "status" otherwise.
func ParseStatus(s string) (string, error) {
	switch s {
	case "", StatusOpen, StatusAnswered, StatusClosed:
		return s, nil
	}
	return "", domain.Invalid(map[string]string{"status": "one of open, answered, closed"})
}

func validCategory(c string) bool {
	for _, k := range Categories {
		if c == k {
			return true
		}
	}
	return false
}

var errNoTicket = domain.Errorf(domain.CodeNotFound, "no such ticket")

func errClosed() error {
	return domain.Errorf(domain.CodeConflict, "the ticket is closed: open a new one to write again")
}

// Service stores tickets and their messages.
type Service struct {
	db     *bun.DB
	notify *notify.Service
	now    domain.Clock
}

// New returns the support service; n tells users of staff answers.
func New(bdb *bun.DB, n *notify.Service, now domain.Clock) *Service {
	return &Service{db: bdb, notify: n, now: now}
}

// ticketRow is a stored ticket.
type ticketRow struct {
	bun.BaseModel `bun:"table:support_tickets,alias:t"`

	ID           string    `bun:"id,pk,type:uuid"`
	UserID       string    `bun:"user_id,type:uuid"`
	Subject      string    `bun:"subject"`
	Category     string    `bun:"category"`
	GameID       *string   `bun:"game_id,type:uuid"`
	Status       string    `bun:"status"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`
	WaitingSince time.Time `bun:"waiting_since"`
	Username     string    `bun:"username,scanonly"`
}

func (r ticketRow) summary() Summary {
	return Summary{ID: r.ID, Subject: r.Subject, Category: r.Category, GameID: r.GameID, Status: r.Status,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// messageRow is a stored message.
type messageRow struct {
	bun.BaseModel `bun:"table:support_messages"`

	ID        string    `bun:"id,pk,type:uuid"`
	TicketID  string    `bun:"ticket_id,type:uuid"`
	Author    string    `bun:"author"`
	StaffID   *string   `bun:"staff_id,type:uuid"`
	Body      string    `bun:"body"`
	CreatedAt time.Time `bun:"created_at"`
}

func (m messageRow) message() Message {
	return Message{ID: m.ID, Author: m.Author, Text: m.Body, CreatedAt: m.CreatedAt}
}

// clock is the time as PostgreSQL stores it (microseconds), so that a
// ticket answered from memory equals the same ticket read back.
func (s *Service) clock() time.Time { return s.now().Truncate(time.Microsecond) }

// MaxOpenTickets is how many tickets that are not closed one user may
// have at once: each waits in the staff's queue.
const MaxOpenTickets = 5

// Open stores a new ticket of userID with its first message. Errors:
// VALIDATION_ERROR naming the fields (gameId when no such game exists),
// CONFLICT when the user has MaxOpenTickets tickets not closed already.
func (s *Service) Open(ctx context.Context, userID string, n NewTicket) (Ticket, error) {
	n, err := n.Clean()
	if err != nil {
		return Ticket{}, err
	}
	now := s.clock()
	t := ticketRow{ID: uuid.NewString(), UserID: userID, Subject: n.Subject, Category: n.Category, GameID: n.GameID,
		Status: StatusOpen, CreatedAt: now, UpdatedAt: now, WaitingSince: now}
	m := messageRow{ID: uuid.NewString(), TicketID: t.ID, Author: AuthorUser, Body: n.Message, CreatedAt: now}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		// One user's tickets are opened one at a time, so that concurrent
		// ones cannot pass the count together.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('support_tickets'), hashtext(?))", userID); err != nil {
			return err
		}
		open, err := tx.NewSelect().Model((*ticketRow)(nil)).Where("user_id = ? AND status <> ?", userID, StatusClosed).Count(ctx)
		if err != nil {
			return err
		}
		if open >= MaxOpenTickets {
			return domain.Errorf(domain.CodeConflict,
				"you have %d support tickets that are not closed, the most you may have at once; write in one of them, or close one",
				MaxOpenTickets)
		}
		if n.GameID != nil {
			exists, err := tx.NewSelect().Table("games").Where("id = ?", *n.GameID).Exists(ctx)
			if err != nil {
				return err
			}
			if !exists {
				return domain.Invalid(map[string]string{"gameId": "no such game"})
			}
		}
		if _, err := tx.NewInsert().Model(&t).Exec(ctx); err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(&m).Exec(ctx)
		return err
	})
	if err != nil {
		return Ticket{}, fmt.Errorf("open a support ticket for user %s: %w", userID, err)
	}
	return Ticket{Summary: t.summary(), Messages: []Message{m.message()}}, nil
}

// Mine returns a user's tickets, newest activity first, of one status
// ("" for all): at most limit after skipping offset.
func (s *Service) Mine(ctx context.Context, userID, status string, limit, offset int) ([]Summary, error) {
	var rows []ticketRow
	q := s.db.NewSelect().Model(&rows).Where("t.user_id = ?", userID).
		OrderExpr("t.updated_at DESC, t.id DESC").Limit(int64(limit)).Offset(int64(offset))
	if status != "" {
		q = q.Where("t.status = ?", status)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the support tickets of user %s: %w", userID, err)
	}
	out := make([]Summary, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.summary())
	}
	return out, nil
}

// Get returns one of the user's tickets with its messages. NOT_FOUND when
// there is no such ticket or it is another user's.
func (s *Service) Get(ctx context.Context, userID, id string) (Ticket, error) {
	st, err := s.read(ctx, s.db, id, false)
	if err != nil {
		return Ticket{}, err
	}
	if st.User.UserID != userID {
		return Ticket{}, errNoTicket
	}
	return st.Ticket, nil
}

// StaffGet returns any ticket with its user and messages. NOT_FOUND when
// there is none.
func (s *Service) StaffGet(ctx context.Context, id string) (StaffTicket, error) {
	return s.read(ctx, s.db, id, false)
}

// read reads a ticket with its user and messages; lock locks the ticket's
// row for the caller's transaction.
func (s *Service) read(ctx context.Context, idb bun.IDB, id string, lock bool) (StaffTicket, error) {
	id, ok := domain.CanonicalID(id)
	if !ok {
		return StaffTicket{}, errNoTicket
	}
	var r ticketRow
	q := idb.NewSelect().Model(&r).ColumnExpr("t.*, u.username").Join("JOIN users AS u ON u.id = t.user_id").Where("t.id = ?", id)
	if lock {
		q = q.For("UPDATE OF t")
	}
	if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return StaffTicket{}, errNoTicket
	} else if err != nil {
		return StaffTicket{}, fmt.Errorf("read support ticket %s: %w", id, err)
	}
	var msgs []messageRow
	if err := idb.NewSelect().Model(&msgs).Where("ticket_id = ?", id).OrderExpr("created_at, id").Scan(ctx); err != nil {
		return StaffTicket{}, fmt.Errorf("read the messages of support ticket %s: %w", id, err)
	}
	t := StaffTicket{Ticket: Ticket{Summary: r.summary(), Messages: make([]Message, 0, len(msgs))},
		User: UserRef{UserID: r.UserID, Username: r.Username}, WaitingSince: r.WaitingSince}
	for _, m := range msgs {
		t.Messages = append(t.Messages, m.message())
	}
	return t, nil
}

// Reply adds the user's message to their ticket and puts it back in the
// staff queue (open). Errors: NOT_FOUND (none, or another user's),
// VALIDATION_ERROR (text), CONFLICT (closed).
func (s *Service) Reply(ctx context.Context, userID, id, text string) (Message, error) {
	return s.write(ctx, id, text, func(t StaffTicket) error {
		if t.User.UserID != userID {
			return errNoTicket
		}
		return nil
	}, "")
}

// Answer adds a staff member's message to a ticket, marks it answered,
// notifies its user (support_reply) and records support.reply by staffID
// in the audit log, all in one transaction. Errors: NOT_FOUND,
// VALIDATION_ERROR (text), CONFLICT (closed); none of them writes anything.
func (s *Service) Answer(ctx context.Context, staffID, id, text string) (Message, error) {
	if staffID == "" { // it would write as the user, unrecorded
		return Message{}, fmt.Errorf("answer support ticket %s: no staff member given", id)
	}
	return s.write(ctx, id, text, nil, staffID)
}

// write adds a message to a ticket: the user's when staffID is "", else
// staff's. allowed refuses the ticket before anything is written.
func (s *Service) write(ctx context.Context, id, text string, allowed func(StaffTicket) error, staffID string) (Message, error) {
	text, err := CleanText(text)
	if err != nil {
		return Message{}, err
	}
	var m messageRow
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		t, err := s.read(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if allowed != nil {
			if err := allowed(t); err != nil {
				return err
			}
		}
		if t.Status == StatusClosed {
			return errClosed()
		}
		now := s.clock()
		m = messageRow{ID: uuid.NewString(), TicketID: t.ID, Author: AuthorUser, Body: text, CreatedAt: now}
		status, waiting := StatusOpen, t.WaitingSince
		if staffID != "" {
			m.Author, m.StaffID, status = AuthorStaff, &staffID, StatusAnswered
		} else if t.Status == StatusAnswered {
			waiting = now // the user waits again from this message on
		}
		if _, err := tx.NewInsert().Model(&m).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Table("support_tickets").Set("status = ?, updated_at = ?, waiting_since = ?", status, now, waiting).
			Where("id = ?", t.ID).Exec(ctx); err != nil {
			return err
		}
		if staffID == "" {
			return nil
		}
		if err := s.notify.Send(ctx, tx, t.User.UserID, notify.SupportReply, ReplyNotice{TicketID: t.ID, Subject: t.Subject}); err != nil {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{ActorID: staffID, Action: audit.SupportReply, Target: audit.TicketTarget(t.ID),
			Data: replyRecord{MessageID: m.ID}, At: now})
	})
	if err != nil {
		return Message{}, fmt.Errorf("write to support ticket %s: %w", id, err)
	}
	return m.message(), nil
}

// Close closes one of the user's tickets and returns it; a closed ticket
// is returned unchanged. NOT_FOUND when none or another user's.
func (s *Service) Close(ctx context.Context, userID, id string) (Ticket, error) {
	t, err := s.close(ctx, id, func(t StaffTicket) error {
		if t.User.UserID != userID {
			return errNoTicket
		}
		return nil
	}, "")
	return t.Ticket, err
}

// StaffClose closes any ticket on behalf of staffID, records
// support.close in the audit log in the same transaction, and returns the
// ticket. A closed ticket is returned unchanged, and nothing is recorded:
// nothing happened. NOT_FOUND when none.
func (s *Service) StaffClose(ctx context.Context, staffID, id string) (StaffTicket, error) {
	if staffID == "" { // it would close unrecorded
		return StaffTicket{}, fmt.Errorf("close support ticket %s: no staff member given", id)
	}
	return s.close(ctx, id, nil, staffID)
}

// replyRecord is the data of a support.reply audit entry.
type replyRecord struct {
	MessageID string `json:"messageId"`
}

// closeRecord is the data of a support.close audit entry.
type closeRecord struct {
	PreviousStatus string `json:"previousStatus"`
}

// close closes a ticket: the user's doing when staffID is "", else staff's
// (recorded in the audit log). allowed refuses the ticket before anything
// is written.
func (s *Service) close(ctx context.Context, id string, allowed func(StaffTicket) error, staffID string) (StaffTicket, error) {
	var t StaffTicket
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		var err error
		if t, err = s.read(ctx, tx, id, true); err != nil {
			return err
		}
		if allowed != nil {
			if err := allowed(t); err != nil {
				return err
			}
		}
		if t.Status == StatusClosed {
			return nil
		}
		previous := t.Status
		t.Status, t.UpdatedAt = StatusClosed, s.clock()
		if _, err = tx.NewUpdate().Table("support_tickets").Set("status = ?, updated_at = ?", t.Status, t.UpdatedAt).
			Where("id = ?", t.ID).Exec(ctx); err != nil || staffID == "" {
			return err
		}
		return audit.Record(ctx, tx, audit.Entry{ActorID: staffID, Action: audit.SupportClose, Target: audit.TicketTarget(t.ID),
			Data: closeRecord{PreviousStatus: previous}, At: t.UpdatedAt})
	})
	if err != nil {
		return StaffTicket{}, fmt.Errorf("close support ticket %s: %w", id, err)
	}
	return t, nil
}

// Queue returns the staff queue of one status (open when status is ""):
// the longest waiting first, at most limit after skipping offset.
func (s *Service) Queue(ctx context.Context, status string, limit, offset int) ([]QueueItem, error) {
	if status == "" {
		status = StatusOpen
	}
	var rows []ticketRow
	if err := s.db.NewSelect().Model(&rows).ColumnExpr("t.*, u.username").Join("JOIN users AS u ON u.id = t.user_id").
		Where("t.status = ?", status).OrderExpr("t.waiting_since, t.id").Limit(int64(limit)).Offset(int64(offset)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the %s support queue: %w", status, err)
	}
	out := make([]QueueItem, 0, len(rows))
	for _, r := range rows {
		out = append(out, QueueItem{Summary: r.summary(), User: UserRef{UserID: r.UserID, Username: r.Username},
			WaitingSince: r.WaitingSince})
	}
	return out, nil
}

// MaxOffset is the largest ?offset= of the ticket lists.
const MaxOffset = 10_000

// offsetReason is the reason of an invalid offset.
var offsetReason = "a whole number from 0 to " + strconv.Itoa(MaxOffset)

// ParseOffset reads ?offset= ("" is 0), or VALIDATION_ERROR for "offset".
func ParseOffset(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > MaxOffset {
		return 0, domain.Invalid(map[string]string{"offset": offsetReason})
	}
	return n, nil
}

// GameChoice is one of a user's games, offered when they open a ticket.
type GameChoice struct {
	ID        string    `bun:"id"`
	GameType  string    `bun:"game_type"`
	CreatedAt time.Time `bun:"created_at"`
}

// RecentGames returns the user's latest limit games, newest first, for the
// new ticket form.
func (s *Service) RecentGames(ctx context.Context, userID string, limit int) ([]GameChoice, error) {
	out := []GameChoice{}
	if err := s.db.NewSelect().TableExpr("games AS g").Join("JOIN game_players AS p ON p.game_id = g.id").
		ColumnExpr("g.id, g.game_type, g.created_at").Where("p.user_id = ?", userID).
		OrderExpr("g.created_at DESC").Limit(int64(limit)).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read the recent games of user %s: %w", userID, err)
	}
	return out, nil
}
