package room

import (
	"context"
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
// writes how many spectator sockets it holds per game (every second, one
// statement) and reads what the others hold. The table is unlogged:
// presence is worth nothing after a database restart.
type Presence struct {
	db  *bun.DB
	now domain.Clock
}

// NewPresence returns the presence store.
func NewPresence(bdb *bun.DB, now domain.Clock) *Presence { return &Presence{db: bdb, now: now} }

// Publish records this instance's counts by game id, replacing its
// previous ones (games no longer in counts are removed), and forgets rows
// of instances silent for a minute.
func (p *Presence) Publish(ctx context.Context, instance string, counts map[string]int) error {
	ids, viewers := make([]string, 0, len(counts)), make([]int, 0, len(counts))
	for id, n := range counts {
		ids, viewers = append(ids, id), append(viewers, n)
	}
	now := p.now()
	_, err := p.db.NewRaw(`WITH cur AS (SELECT unnest(?::uuid[]) AS game_id, unnest(?::int[]) AS viewers),
		gone AS (DELETE FROM game_viewers v WHERE v.instance_id = ? AND v.game_id <> ALL(?::uuid[])),
		stale AS (DELETE FROM game_viewers v WHERE v.updated_at < ? AND v.instance_id <> ?)
		INSERT INTO game_viewers (game_id, instance_id, viewers, updated_at)
		SELECT cur.game_id, ?, cur.viewers, ? FROM cur JOIN games g ON g.id = cur.game_id
		ON CONFLICT (game_id, instance_id) DO UPDATE SET viewers = EXCLUDED.viewers, updated_at = EXCLUDED.updated_at`,
		pgdialect.Array(ids), pgdialect.Array(viewers), instance, pgdialect.Array(ids), now.Add(-time.Minute), instance,
		instance, now).Exec(ctx)
	if err != nil {
		return fmt.Errorf("publish the spectator counts of %d games: %w", len(counts), err)
	}
	return nil
}

// Others returns the spectator counts by game id of every other instance
// heard from within PresenceTTL.
func (p *Presence) Others(ctx context.Context, instance string) (map[string]int, error) {
	var rows []struct {
		GameID string `bun:"game_id"`
		N      int    `bun:"n"`
	}
	err := p.db.NewSelect().Table("game_viewers").ColumnExpr("game_id, sum(viewers) AS n").
		Where("instance_id <> ? AND updated_at > ?", instance, p.now().Add(-PresenceTTL)).Group("game_id").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("read other instances' spectator counts: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.GameID] = r.N
	}
	return out, nil
}
