// Package bots runs the demo players: they keep free rock-paper-scissors
// games going between themselves, so that a newcomer to a fresh install
// always finds something live to watch, and they play people: they accept
// free challenges and rematches, take the second seat of a person's free
// table nobody else takes, and play both game types at a human pace. They
// play through the same game service as everyone else.
package bots

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"wager/chain"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/users"
)

// Pace of the bots.
const (
	// PeopleFirst is how long a person's free table waits for another
	// person before a bot takes the seat.
	PeopleFirst = 10 * time.Second
	// RematchWindow is how long after a game a bot still accepts a
	// rematch.
	RematchWindow = 5 * time.Minute
	// AfterPeople is how long a bot that played a person stays out of the
	// bots' own games, free for the rematch.
	AfterPeople = 30 * time.Second
)

// Bots runs the demo players.
type Bots struct {
	db    *bun.DB
	games *game.Service
	keys  *chain.Keys
	now   domain.Clock
	log   *slog.Logger
	count int

	ids        []string
	lobbyID    string
	thinkAt    map[string]time.Time // per bot: when to move on its current turn
	withPerson map[string]time.Time // per bot: when it last played a person
}

// New returns count demo players whose wallets derive from keys.
func New(bdb *bun.DB, games *game.Service, keys *chain.Keys, now domain.Clock, log *slog.Logger, count int) *Bots {
	return &Bots{db: bdb, games: games, keys: keys, now: now, log: log, count: count,
		thinkAt: map[string]time.Time{}, withPerson: map[string]time.Time{}}
}

// Run plays until ctx is done.
func (b *Bots) Run(ctx context.Context) {
	domain.Every(ctx, 500*time.Millisecond, b.log, "demo bots", b.Tick)
}

// Tick does one round of the bots' work: create them and their lobby on
// first use, move in their games after a human-looking pause, answer
// people (challenges, rematches, tables), and queue the idle ones for a
// game among themselves. With three bots or more, one or two (to keep the
// others even) stay out of the bots' own games, free for people at once.
func (b *Bots) Tick(ctx context.Context) error {
	if err := b.setUp(ctx); err != nil {
		return err
	}
	for i, id := range b.ids {
		cg, err := b.games.CurrentGameOf(ctx, id)
		if err != nil {
			return err
		}
		if cg != nil {
			if err := b.play(ctx, id, cg.GameID); err != nil {
				return err
			}
			continue
		}
		if answered, err := b.answerPeople(ctx, id); err != nil {
			return err
		} else if answered {
			continue
		}
		if b.count >= 3 && i >= (b.count-1)&^1 {
			continue // on call for people
		}
		if b.now().Sub(b.withPerson[id]) < AfterPeople {
			continue // free for a rematch
		}
		if _, err := b.games.JoinQueue(ctx, id, b.lobbyID); err != nil && domain.ErrorCode(err) != domain.CodeConflict {
			return err
		}
	}
	return nil
}

// answerPeople has an idle bot accept a person's free challenge (and
// decline a staked one: bots hold no money), accept a rematch it was asked
// for, or take the second seat of a person's free table. It reports whether
// the bot took a game.
func (b *Bots) answerPeople(ctx context.Context, id string) (bool, error) {
	challenges, err := b.games.Challenges(ctx, id)
	if err != nil {
		return false, err
	}
	for _, c := range challenges {
		if c.ToUser != id {
			continue
		}
		if c.StakeMinor == 0 {
			if err := b.leaveQueue(ctx, id); err != nil {
				return false, err
			}
			_, err := b.games.RespondChallenge(ctx, id, c.ID, "accept")
			if err == nil {
				return true, nil
			}
			if !settled(err) {
				return false, err
			}
		}
		// Staked (bots hold no money), or the challenger is busy: declined.
		if _, err := b.games.RespondChallenge(ctx, id, c.ID, "decline"); err != nil && !settled(err) {
			return false, err
		}
	}
	rematches, err := b.games.RematchesAsked(ctx, id, b.now().Add(-RematchWindow))
	if err != nil {
		return false, err
	}
	for _, gameID := range rematches {
		if err := b.leaveQueue(ctx, id); err != nil {
			return false, err
		}
		switch _, err := b.games.RequestRematch(ctx, id, gameID); {
		case err == nil:
			return true, nil
		case !settled(err):
			return false, err
		}
	}
	tables, err := b.games.PeoplesFreeTables(ctx, b.now().Add(-PeopleFirst))
	if err != nil || len(tables) == 0 {
		return false, err
	}
	if err := b.leaveQueue(ctx, id); err != nil {
		return false, err
	}
	if _, err := b.games.JoinQueue(ctx, id, tables[0]); err != nil && !settled(err) {
		return false, err
	}
	return true, nil
}

// settled reports an error that only says someone was quicker (the
// challenge or table was taken, the person left): nothing to do.
func settled(err error) bool {
	switch domain.ErrorCode(err) {
	case domain.CodeConflict, domain.CodeNotFound, domain.CodeInsufficientFunds:
		return true
	}
	return false
}

func (b *Bots) leaveQueue(ctx context.Context, id string) error {
	if err := b.games.LeaveQueue(ctx, id, b.lobbyID); err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
		return err
	}
	return nil
}

// play moves for a bot when it is its turn, after a pause of one to five
// seconds (one to three in Connect Four).
func (b *Bots) play(ctx context.Context, id, gameID string) error {
	st, err := b.games.PublicState(ctx, gameID)
	if err != nil {
		return nil // the game just ended
	}
	for _, p := range st.Base().Players {
		if !slices.Contains(b.ids, p) {
			b.withPerson[id] = b.now()
		}
	}
	var move any
	pause := 1000 + rand.IntN(4000)
	switch v := st.(type) {
	case *rules.RPSView:
		if v.Submitted[id] {
			delete(b.thinkAt, id)
			return nil
		}
		move = []string{"rock", "paper", "scissors"}[rand.IntN(3)]
	case *rules.C4View:
		if v.Turn == nil || *v.Turn != id {
			delete(b.thinkAt, id)
			return nil
		}
		move = map[string]int{"column": ConnectFourColumn(v.Board, id)}
		pause = 1000 + rand.IntN(2000)
	default:
		return nil
	}
	at, ok := b.thinkAt[id]
	if !ok {
		b.thinkAt[id] = b.now().Add(time.Duration(pause) * time.Millisecond)
		return nil
	}
	if b.now().Before(at) {
		return nil
	}
	delete(b.thinkAt, id)
	raw, _ := json.Marshal(move)
	_, err = b.games.Act(ctx, id, gameID, game.Action{Type: "move", Move: raw})
	if err != nil && domain.ErrorCode(err) != domain.CodeInternal {
		return nil // raced with a timeout or the end of the game
	}
	return err
}

// Opponent returns a bot for a person to play: an idle one if there is one
// (it accepts at once), else one waiting for a game among the bots, else
// one that will accept when its game ends.
func (b *Bots) Opponent(ctx context.Context) (users.User, error) {
	var u users.User
	err := b.db.NewSelect().Model(&u).ModelTableExpr("users AS u").ColumnExpr("u.*").
		Join("LEFT JOIN user_presence AS p ON p.user_id = u.id").
		Where("u.bot").OrderExpr("CASE WHEN p.kind IS NULL THEN 0 WHEN p.kind = 'queue' THEN 1 ELSE 2 END, random()").
		Limit(1).Scan(ctx)
	if err != nil {
		return u, fmt.Errorf("find a demo bot: %w", err)
	}
	return u, nil
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
			var err error
			if u, _, err = users.FindOrCreate(ctx, tx, wallet, b.now()); err != nil {
				return err
			}
			// Spectators should see that these are bots.
			name := fmt.Sprintf("demo_bot_%d", i+1)
			_, err = tx.ExecContext(ctx, `UPDATE users SET bot = true,
				username = CASE WHEN bot OR EXISTS (SELECT 1 FROM users WHERE username = ?) THEN username ELSE ? END,
				display_name = CASE WHEN bot THEN display_name ELSE ? END
				WHERE id = ?`, name, name, fmt.Sprintf("Demo bot %d", i+1), u.ID)
			return err
		})
		if err != nil {
			return fmt.Errorf("set up demo bot %d: %w", i+1, err)
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
