package room

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

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
