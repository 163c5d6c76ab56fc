package game

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain/game/rules"
)

// EventsChannel is the NOTIFY channel that announces new game events; the
// payload is the game id.
const EventsChannel = "game_events"

// NoticesChannel carries personal notices; the payload is a JSON Notice
// with its user id.
const NoticesChannel = "user_notices"

// Event is one stored game event.
type Event struct {
	bun.BaseModel `bun:"table:game_events"`

	GameID    string          `bun:"game_id,pk,type:uuid" json:"gameId"`
	Seq       int             `bun:"seq,pk" json:"seq"`
	Name      string          `bun:"name" json:"event"`
	Data      json.RawMessage `bun:"data,type:jsonb" json:"data"`
	CreatedAt time.Time       `bun:"created_at" json:"createdAt"`
}

// AppendEvents stores events after the game's last one, in the caller's
// transaction, and announces them to every instance when it commits.
// Everything that happens in a game's room goes through it, so the room's
// events keep one order.
func AppendEvents(ctx context.Context, tx bun.Tx, gameID string, now time.Time, events ...rules.Event) error {
	if len(events) == 0 {
		return nil
	}
	var last int
	if err := tx.QueryRowContext(ctx, "UPDATE games SET seq = seq + ? WHERE id = ? RETURNING seq",
		len(events), gameID).Scan(&last); err != nil {
		return err
	}
	rows := make([]Event, len(events))
	for i, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return err
		}
		rows[i] = Event{GameID: gameID, Seq: last - len(events) + 1 + i, Name: e.Name, Data: data, CreatedAt: now}
	}
	if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return err
	}
	return db.Notify(ctx, tx, EventsChannel, gameID)
}

// Events returns a game's events with seq greater than after, in order, at
// most limit of them.
func (s *Service) Events(ctx context.Context, gameID string, after, limit int) ([]Event, error) {
	var out []Event
	err := s.db.NewSelect().Model(&out).Where("game_id = ? AND seq > ?", gameID, after).
		Order("seq").Limit(int64(limit)).Scan(ctx)
	return out, err
}

// Notice is a personal message on a user's channel (matched, challenged...).
type Notice struct {
	UserID string `json:"userId"`
	Type   string `json:"type"`
	Data   any    `json:"data"`
}

// sendNotice announces a notice to the user's sockets on every instance
// when tx commits. Notices are not stored: a user who is not connected
// finds the same facts through the API.
func (s *Service) sendNotice(ctx context.Context, tx bun.Tx, userID string, n Notice) error {
	n.UserID = userID
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return db.Notify(ctx, tx, NoticesChannel, string(b))
}
