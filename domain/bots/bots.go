// Package bots keeps a few demo players busy with free rock-paper-scissors
// games, so that a newcomer to a fresh local install always finds
// something live to watch. They play through the same game service as
// everyone else.
package bots

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/uptrace/bun"

	"wager/chain"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/users"
)

// Bots runs the demo players.
type Bots struct {
	db    *bun.DB
	games *game.Service
	keys  *chain.Keys
	now   domain.Clock
	log   *slog.Logger
	count int

	ids     []string
	lobbyID string
	thinkAt map[string]time.Time // per bot: when to move in its current round
}

// New returns count demo players whose wallets derive from keys.
func New(bdb *bun.DB, games *game.Service, keys *chain.Keys, now domain.Clock, log *slog.Logger, count int) *Bots {
	return &Bots{db: bdb, games: games, keys: keys, now: now, log: log, count: count, thinkAt: map[string]time.Time{}}
}

// Run plays until ctx is done.
func (b *Bots) Run(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := b.Tick(ctx); err != nil && ctx.Err() == nil {
				b.log.Warn("demo bots", "err", err)
			}
		}
	}
}

// Tick does one round of the bots' work: create them and their lobby on
// first use, queue the idle ones, and move in their games after a short,
// human-looking pause.
func (b *Bots) Tick(ctx context.Context) error {
	if err := b.setUp(ctx); err != nil {
		return err
	}
	for _, id := range b.ids {
		cg, err := b.games.CurrentGameOf(ctx, id)
		if err != nil {
			return err
		}
		if cg == nil {
			if _, err := b.games.JoinQueue(ctx, id, b.lobbyID); err != nil && domain.ErrorCode(err) != domain.CodeConflict {
				return err
			}
			continue
		}
		if err := b.play(ctx, id, cg.GameID); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bots) play(ctx context.Context, id, gameID string) error {
	st, err := b.games.PublicState(ctx, gameID)
	if err != nil {
		return nil // the game just ended
	}
	if v, ok := st.(*rules.RPSView); !ok || v.Submitted[id] {
		delete(b.thinkAt, id)
		return nil
	}
	at, ok := b.thinkAt[id]
	if !ok {
		b.thinkAt[id] = b.now().Add(time.Duration(1000+rand.IntN(4000)) * time.Millisecond)
		return nil
	}
	if b.now().Before(at) {
		return nil
	}
	delete(b.thinkAt, id)
	choice, _ := json.Marshal([]string{"rock", "paper", "scissors"}[rand.IntN(3)])
	_, err = b.games.Act(ctx, id, gameID, game.Action{Type: "move", Move: choice})
	if err != nil && domain.ErrorCode(err) != domain.CodeInternal {
		return nil // raced with a timeout or the end of the game
	}
	return err
}

func (b *Bots) setUp(ctx context.Context) error {
	if len(b.ids) == b.count && b.lobbyID != "" {
		return nil
	}
	b.ids = b.ids[:0]
	for i := 0; i < b.count; i++ {
		wallet := b.keys.Derive(fmt.Sprintf("demo-bot-%d", i)).PublicKey().String()
		var u users.User
		err := b.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var created bool
			var err error
			if u, created, err = users.FindOrCreate(ctx, tx, wallet, b.now()); err != nil || !created {
				return err
			}
			// Spectators should see that these are bots.
			name := fmt.Sprintf("demo_bot_%d", i+1)
			_, err = tx.ExecContext(ctx, `UPDATE users SET username = ?, display_name = ? WHERE id = ?
				AND NOT EXISTS (SELECT 1 FROM users WHERE username = ?)`, name, fmt.Sprintf("Demo bot %d", i+1), u.ID, name)
			return err
		})
		if err != nil {
			return err
		}
		b.ids = append(b.ids, u.ID)
	}
	settings := json.RawMessage(`{"rounds": 3, "roundSeconds": 10}`)
	l, err := b.games.CreateLobby(ctx, b.ids[0], "rps", 0, settings)
	if err != nil {
		return err
	}
	b.lobbyID = l.ID
	return nil
}
