// Package audit keeps the record of admin actions: who did what to which
// thing, and when. An entry is written in the same transaction as the
// action it records, so the two commit or roll back together: a refused
// action leaves no entry, and no action happens without one. The database
// refuses to change or delete an entry once written (migration 0029).
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
)

// Actions: stable dotted names, safe to match on.
const (
	FlagSet          = "flag.set"          // data: {enabled}
	SupportReply     = "support.reply"     // data: {messageId}
	SupportClose     = "support.close"     // data: {previousStatus}
	IntegrityRelease = "integrity.release" // a held game's bets and market settled as usual; data: the review, decisionReason included
	IntegrityVoid    = "integrity.void"    // a held game's bets refunded and market resolved at 500000; data: as release's
)

// FlagTarget names a feature flag as an entry's target.
func FlagTarget(name string) string { return "flag:" + name }

// TicketTarget names a support ticket as an entry's target.
func TicketTarget(id string) string { return "ticket:" + id }

// GameTarget names a game as an entry's target.
func GameTarget(id string) string { return "game:" + id }

// Entry is one admin action to record.
type Entry struct {
	ActorID string // the admin's user id
	Action  string // one of the Actions above, or another dotted name
	Target  string // what was acted on: FlagTarget, TicketTarget, GameTarget
	// Data is a struct with json tags (it must marshal to a JSON object)
	// saying what the action did; nil records {}.
	Data any
	// At is when the action happened; zero takes the database's time of
	// the transaction.
	At time.Time
}

// Record writes e in the caller's transaction: idb must be the db.Tx in
// which the action itself is written, so that the entry commits and rolls
// back with it. The actor's username is stored as it is now. It returns an
// error, which must fail the action, when the actor is no user, the action
// or target is empty, Data is not a JSON object, or the insert fails.
func Record(ctx context.Context, idb bun.IDB, e Entry) error {
	data := []byte("{}")
	if e.Data != nil {
		var err error
		if data, err = json.Marshal(e.Data); err != nil {
			return fmt.Errorf("audit %s of %s: encode its data: %w", e.Action, e.Target, err)
		}
		if !bytes.HasPrefix(data, []byte("{")) {
			return fmt.Errorf("audit %s of %s: its data must be a JSON object, not %s", e.Action, e.Target, data)
		}
	}
	actor, ok := domain.CanonicalID(e.ActorID)
	if !ok || e.Action == "" || e.Target == "" {
		return fmt.Errorf("audit %q of %q by %q: actor, action and target are required", e.Action, e.Target, e.ActorID)
	}
	var at *time.Time
	if !e.At.IsZero() {
		at = &e.At
	}
	res, err := idb.NewRaw(`INSERT INTO admin_audit (actor_id, actor_username, action, target, data, created_at)
		SELECT id, username, ?, ?, ?::jsonb, coalesce(?::timestamptz, now()) FROM users WHERE id = ?`,
		e.Action, e.Target, string(data), at, actor).Exec(ctx)
	if err != nil {
		return fmt.Errorf("audit %s of %s by %s: %w", e.Action, e.Target, actor, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("audit %s of %s: no user %s (%d rows, %v)", e.Action, e.Target, actor, n, err)
	}
	return nil
}

// Actor is who did an action.
type Actor struct {
	UserID   string `json:"userId"`
	Username string `json:"username" doc:"as it was when they acted"`
}

// Item is one entry of the log, as GET /admin/audit answers it.
type Item struct {
	ID        string          `json:"id" doc:"a sequence number as a string; pass the last one seen as ?before= for older entries"`
	Actor     Actor           `json:"actor"`
	Action    string          `json:"action" doc:"a stable dotted name: flag.set, support.reply, support.close, integrity.release, integrity.void"`
	Target    string          `json:"target" doc:"what was acted on: flag:<name>, ticket:<id> or game:<id>"`
	Data      json.RawMessage `json:"data" type:"object" doc:"what the action did; depends on the action"`
	CreatedAt time.Time       `json:"createdAt"`
}

// row is a stored entry.
type row struct {
	bun.BaseModel `bun:"table:admin_audit"`

	ID            int64           `bun:"id,pk,autoincrement"`
	ActorID       string          `bun:"actor_id,type:uuid"`
	ActorUsername string          `bun:"actor_username"`
	Action        string          `bun:"action"`
	Target        string          `bun:"target"`
	Data          json.RawMessage `bun:"data,type:jsonb"`
	CreatedAt     time.Time       `bun:"created_at"`
}

// Service reads the log.
type Service struct{ db *bun.DB }

// New returns the service that reads the log of bdb.
func New(bdb *bun.DB) *Service { return &Service{db: bdb} }

// List returns the newest entries first, at most limit of them, only those
// older than the entry before when before > 0. It returns an empty list,
// never nil, when there are none, and an error when the read fails.
func (s *Service) List(ctx context.Context, limit int, before int64) ([]Item, error) {
	var rows []row
	q := s.db.NewSelect().Model(&rows).Order("id DESC").Limit(int64(limit))
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read %d audit entries before %d: %w", limit, before, err)
	}
	out := make([]Item, 0, len(rows))
	for _, r := range rows {
		out = append(out, Item{ID: strconv.FormatInt(r.ID, 10), Actor: Actor{UserID: r.ActorID, Username: r.ActorUsername},
			Action: r.Action, Target: r.Target, Data: r.Data, CreatedAt: r.CreatedAt})
	}
	return out, nil
}
