package game

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain/game/rules"
)

// viewerTTL is how long an instance's spectator count stays valid without
// a refresh: a crashed instance's viewers stop counting after it.
const viewerTTL = 30 * time.Second

// ViewerRefresh is how often instances refresh their counts.
const ViewerRefresh = 10 * time.Second

// SetViewers records how many spectators watch a game on one instance and,
// when the total across instances changed, announces game:spectators.
func (s *Service) SetViewers(ctx context.Context, gameID, instanceID string, viewers int) error {
	return db.ReadCommitted(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		g, err := loadGame(ctx, tx, gameID, true)
		if err != nil {
			return err
		}
		before, err := totalViewers(ctx, tx, gameID, s.now())
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO game_viewers (game_id, instance_id, viewers, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (game_id, instance_id) DO UPDATE SET viewers = EXCLUDED.viewers, updated_at = EXCLUDED.updated_at`,
			gameID, instanceID, viewers, s.now()); err != nil {
			return err
		}
		after, err := totalViewers(ctx, tx, gameID, s.now())
		if err != nil || after == before || g.Status != StatusActive {
			return err
		}
		return AppendEvents(ctx, tx, gameID, s.now(), rules.Event{Name: "game:spectators", Data: map[string]any{"count": after}})
	})
}

// RefreshViewers keeps an instance's counts alive.
func (s *Service) RefreshViewers(ctx context.Context, instanceID string) error {
	_, err := s.db.ExecContext(ctx, "UPDATE game_viewers SET updated_at = ? WHERE instance_id = ?", s.now(), instanceID)
	return err
}

func totalViewers(ctx context.Context, idb bun.IDB, gameID string, now time.Time) (int, error) {
	var n int
	err := idb.QueryRowContext(ctx, "SELECT coalesce(sum(viewers), 0) FROM game_viewers WHERE game_id = ? AND updated_at > ?",
		gameID, now.Add(-viewerTTL)).Scan(&n)
	return n, err
}

func (s *Service) spectatorCounts(ctx context.Context, ids ...string) (map[string]int, error) {
	out := map[string]int{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		GameID string `bun:"game_id"`
		N      int    `bun:"n"`
	}
	err := s.db.NewSelect().Table("game_viewers").ColumnExpr("game_id, sum(viewers) AS n").
		Where("game_id IN (?) AND updated_at > ?", bun.In(ids), s.now().Add(-viewerTTL)).Group("game_id").Scan(ctx, &rows)
	for _, r := range rows {
		out[r.GameID] = r.N
	}
	return out, err
}
