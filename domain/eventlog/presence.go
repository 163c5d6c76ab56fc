package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/domain"
)

// PresenceTTL is how long an instance's spectator counts count without a
// refresh: the counts of an instance that died stop counting after it.
const PresenceTTL = 3 * time.Second

// Presence shares spectator counts between instances: each instance
// writes how many spectator sockets it holds per game, as one row
// rewritten every second, and reads the other instances' rows.
type Presence struct {
	db  *bun.DB
	now domain.Clock
}

// NewPresence returns the presence store.
func NewPresence(bdb *bun.DB, now domain.Clock) *Presence { return &Presence{db: bdb, now: now} }

// Publish records this instance's counts by game id, replacing its
// previous ones, and forgets the rows of instances silent for a minute.
func (p *Presence) Publish(ctx context.Context, instance string, counts map[string]int) error {
	raw, err := json.Marshal(counts)
	if err != nil {
		return fmt.Errorf("encode the spectator counts: %w", err)
	}
	now := p.now()
	_, err = p.db.NewRaw(`WITH gone AS (DELETE FROM instance_presence WHERE updated_at < ? AND instance_id <> ?)
		INSERT INTO instance_presence (instance_id, counts, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (instance_id) DO UPDATE SET counts = EXCLUDED.counts, updated_at = EXCLUDED.updated_at`,
		now.Add(-time.Minute), instance, instance, string(raw), now).Exec(ctx)
	if err != nil {
		return fmt.Errorf("publish the spectator counts of %d games: %w", len(counts), err)
	}
	return nil
}

// Others returns the spectator counts by game id of every other instance
// heard from within PresenceTTL.
func (p *Presence) Others(ctx context.Context, instance string) (map[string]int, error) {
	var rows []json.RawMessage
	err := p.db.NewSelect().Table("instance_presence").Column("counts").
		Where("instance_id <> ? AND updated_at > ?", instance, p.now().Add(-PresenceTTL)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read other instances' spectator counts: %w", err)
	}
	out := map[string]int{}
	for _, raw := range rows {
		var counts map[string]int
		if err := json.Unmarshal(raw, &counts); err != nil {
			return nil, fmt.Errorf("read other instances' spectator counts: %w", err)
		}
		for id, n := range counts {
			out[id] += n
		}
	}
	return out, nil
}

// OthersUp reports whether an instance other than instance wrote its row
// within the last within.
func (p *Presence) OthersUp(ctx context.Context, instance string, within time.Duration) (bool, error) {
	up, err := p.db.NewSelect().Table("instance_presence").
		Where("instance_id <> ? AND updated_at > ?", instance, p.now().Add(-within)).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("look for other instances: %w", err)
	}
	return up, nil
}

// SetOnline records which users hold a socket on an instance: online and
// offline are the users whose state changed there; with full, online is
// all of them and the instance's other rows go, as do the rows of
// instances no longer present. One statement, so that it never holds a
// transaction open.
func (p *Presence) SetOnline(ctx context.Context, instance string, online, offline []string, full bool) error {
	_, err := p.db.NewRaw(`WITH gone AS (
			DELETE FROM online_users AS o
			WHERE (o.instance_id = ? AND (o.user_id = ANY(?::uuid[]) OR (? AND o.user_id <> ALL(?::uuid[]))))
				OR (? AND NOT EXISTS (SELECT 1 FROM instance_presence AS i WHERE i.instance_id = o.instance_id))),
		came AS (
			INSERT INTO online_users (instance_id, user_id) SELECT ?, u FROM unnest(?::uuid[]) AS u ON CONFLICT DO NOTHING)
		SELECT 1`,
		instance, pgdialect.Array(offline), full, pgdialect.Array(online), full, instance, pgdialect.Array(online)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record %d users online and %d offline: %w", len(online), len(offline), err)
	}
	return nil
}

// Online tells which of the users hold a socket on an instance heard from
// within PresenceTTL.
func (p *Presence) Online(ctx context.Context, userIDs []string) (map[string]bool, error) {
	var ids []string
	err := p.db.NewSelect().TableExpr("online_users AS o").
		Join("JOIN instance_presence AS i ON i.instance_id = o.instance_id").
		ColumnExpr("DISTINCT o.user_id").
		Where("o.user_id = ANY(?::uuid[]) AND i.updated_at > ?", pgdialect.Array(userIDs), p.now().Add(-PresenceTTL)).
		Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("read who of %d users is online: %w", len(userIDs), err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// SetRooms records who holds a socket in which room on an instance, as
// SetOnline records who is online: joined and left are the changes since
// the last call; with full, joined is every member there and the
// instance's other rows go, as do the rows of instances no longer present.
func (p *Presence) SetRooms(ctx context.Context, instance string, joined, left []domain.RoomMember, full bool) error {
	jr, ju := roomColumns(joined)
	lr, lu := roomColumns(left)
	_, err := p.db.NewRaw(`WITH gone AS (
			DELETE FROM room_members AS m
			WHERE (m.instance_id = ? AND ((m.room_id, m.user_id) IN (SELECT * FROM unnest(?::uuid[], ?::uuid[]))
					OR (? AND (m.room_id, m.user_id) NOT IN (SELECT * FROM unnest(?::uuid[], ?::uuid[])))))
				OR (? AND NOT EXISTS (SELECT 1 FROM instance_presence AS i WHERE i.instance_id = m.instance_id))),
		came AS (
			INSERT INTO room_members (instance_id, room_id, user_id)
			SELECT ?, r, u FROM unnest(?::uuid[], ?::uuid[]) AS v (r, u) ON CONFLICT DO NOTHING)
		SELECT 1`,
		instance, pgdialect.Array(lr), pgdialect.Array(lu), full, pgdialect.Array(jr), pgdialect.Array(ju), full,
		instance, pgdialect.Array(jr), pgdialect.Array(ju)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record %d room members and %d gone: %w", len(joined), len(left), err)
	}
	return nil
}

func roomColumns(ms []domain.RoomMember) (rooms, users []string) {
	rooms, users = make([]string, len(ms)), make([]string, len(ms))
	for i, m := range ms {
		rooms[i], users[i] = m.RoomID, m.UserID
	}
	return rooms, users
}
