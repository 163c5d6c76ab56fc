package game

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/money"
)

// newGame is what starting a game needs.
type newGame struct {
	lobbyID   *string
	rematchOf *string
	gameType  string
	stake     int64
	settings  json.RawMessage
	players   []string // seat order
}

// startGame creates an active game inside tx: it marks the players busy
// (CONFLICT when one already plays), locks their stakes
// (INSUFFICIENT_FUNDS when one cannot cover it), starts the rules, stores
// the opening events and tells the players.
func (s *Service) startGame(ctx context.Context, tx bun.Tx, n newGame) (Game, error) {
	r, err := rulesOf(n.gameType)
	if err != nil {
		return Game{}, err
	}
	now := s.now()
	id := uuid.NewString()
	state, events, err := r.Start(id, n.players, n.settings, now)
	if err != nil {
		return Game{}, err
	}
	raw, err := state.MarshalJSON()
	if err != nil {
		return Game{}, err
	}
	g := Game{ID: id, LobbyID: n.lobbyID, RematchOf: n.rematchOf, GameType: n.gameType, StakeMinor: n.stake,
		Settings: n.settings, Status: StatusActive, State: raw, CreatedAt: now}
	if d := state.Deadline(); !d.IsZero() {
		g.Deadline = &d
	}
	if _, err := tx.NewInsert().Model(&g).Exec(ctx); err != nil {
		return Game{}, err
	}
	var seats []map[string]any
	for seat, uid := range n.players {
		if _, err := tx.NewInsert().Model(&Player{GameID: id, UserID: uid, Seat: seat}).Exec(ctx); err != nil {
			return Game{}, err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO user_presence (user_id, kind, game_id, since) VALUES (?, 'game', ?, ?)
			ON CONFLICT (user_id) DO NOTHING`, uid, id, now)
		if err != nil {
			return Game{}, err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return Game{}, domain.Errorf(domain.CodeConflict, "a player is already in a queue or a game")
		}
		if n.stake > 0 {
			if ok, err := covers(ctx, tx, uid, n.stake); err != nil {
				return Game{}, err
			} else if !ok {
				return Game{}, domain.Errorf(domain.CodeInsufficientFunds, "a player's balance does not cover the %s USDC stake",
					money.FormatUSDC(n.stake))
			}
			if _, err := money.Post(ctx, tx, money.Posting{Kind: "stake", Reference: "stake:" + id + ":" + uid,
				Entries: []money.Entry{{Account: money.Available(uid), Amount: -n.stake}, {Account: money.Locked(uid), Amount: n.stake}}}); err != nil {
				return Game{}, err
			}
			if err := money.RecordActivity(ctx, tx, money.Activity{UserID: uid, Kind: "stake", AmountMinor: -n.stake,
				Counterparty: "game " + id}, now); err != nil {
				return Game{}, err
			}
		}
		var name string
		if err := tx.NewSelect().Table("users").Column("username").Where("id = ?", uid).Scan(ctx, &name); err != nil {
			return Game{}, err
		}
		seats = append(seats, map[string]any{"userId": uid, "username": name, "seat": seat})
	}
	started := rules.Event{Name: "game:started", Data: map[string]any{"gameId": id, "gameType": n.gameType,
		"players": seats, "stakeMinor": n.stake, "settings": n.settings}}
	if err := AppendEvents(ctx, tx, id, now, append([]rules.Event{started}, events...)...); err != nil {
		return Game{}, err
	}
	for _, uid := range n.players {
		if err := s.notify(ctx, tx, uid, Notice{Type: "game:matched", Data: map[string]any{"gameId": id, "gameType": n.gameType}}); err != nil {
			return Game{}, err
		}
	}
	return g, nil
}

// Action is a player's action in a game.
type Action struct {
	Type string          `json:"type" doc:"move or resign"`
	Move json.RawMessage `json:"move,omitempty" doc:"game-specific; rps: \"rock\", \"paper\" or \"scissors\"; connect4: {\"column\": 0-6}"`
}

// ActResult is the answer to an action.
type ActResult struct {
	Accepted bool   `json:"accepted"`
	Status   string `json:"status" doc:"the game's status after the action"`
	Seq      int    `json:"seq" doc:"the game's last event"`
}

// Act applies a player's action. Errors: NOT_FOUND, NOT_A_PLAYER,
// GAME_NOT_ACTIVE, ALREADY_MOVED, NOT_YOUR_TURN, INVALID_MOVE,
// VALIDATION_ERROR (unknown action type).
func (s *Service) Act(ctx context.Context, userID, gameID string, a Action) (ActResult, error) {
	if a.Type != "move" && a.Type != "resign" {
		return ActResult{}, domain.Invalid(map[string]string{"type": "must be move or resign"})
	}
	var out ActResult
	err := db.ReadCommitted(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		g, err := loadGame(ctx, tx, gameID, true)
		if err != nil {
			return err
		}
		players, err := playerIDs(ctx, tx, g.ID)
		if err != nil {
			return err
		}
		if !contains(players, userID) {
			return domain.Errorf(domain.CodeNotAPlayer, "only players may submit actions")
		}
		if g.Status != StatusActive {
			return domain.Errorf(domain.CodeGameNotActive, "the game is %s", g.Status)
		}
		return s.advance(ctx, tx, &g, players, func(st rules.State, now time.Time) ([]rules.Event, error) {
			if a.Type == "resign" {
				return st.Resign(userID, now)
			}
			if len(a.Move) == 0 {
				return nil, domain.Invalid(map[string]string{"move": "required for a move"})
			}
			return st.Move(userID, a.Move, now, s.rand)
		}, &out)
	})
	return out, err
}

// advance runs one step of a locked game's rules, stores the new state and
// events, and finishes the game when the rules say it is over.
func (s *Service) advance(ctx context.Context, tx bun.Tx, g *Game, players []string,
	step func(rules.State, time.Time) ([]rules.Event, error), out *ActResult) error {
	r, err := rulesOf(g.GameType)
	if err != nil {
		return err
	}
	st, err := r.Load(g.State)
	if err != nil {
		return err
	}
	now := s.now()
	events, err := step(st, now)
	if err != nil {
		return err
	}
	if g.State, err = st.MarshalJSON(); err != nil {
		return err
	}
	g.Deadline = nil
	if d := st.Deadline(); !d.IsZero() {
		g.Deadline = &d
	}
	if _, err := tx.NewUpdate().Model(g).Column("state", "deadline").WherePK().Exec(ctx); err != nil {
		return err
	}
	if err := AppendEvents(ctx, tx, g.ID, now, events...); err != nil {
		return err
	}
	if o := st.Outcome(); o.Done {
		if err := s.finish(ctx, tx, g, players, o, now); err != nil {
			return err
		}
	}
	if out != nil {
		if err := tx.NewSelect().Model(g).Column("seq", "status").WherePK().Scan(ctx); err != nil {
			return err
		}
		*out = ActResult{Accepted: true, Status: g.Status, Seq: g.Seq}
	}
	return nil
}

// finish ends a game exactly once (the caller holds its row lock): pays
// out, frees the players and announces game:completed.
func (s *Service) finish(ctx context.Context, tx bun.Tx, g *Game, players []string, o rules.Outcome, now time.Time) error {
	g.Status = StatusCompleted
	if o.Reason == "abandoned" {
		g.Status = StatusCancelled
	}
	money, err := s.settle(ctx, tx, *g, players, o)
	if err != nil {
		return err
	}
	result := map[string]any{"winnerId": nilIfEmpty(o.Winner), "reason": o.Reason, "draw": o.Winner == ""}
	for k, v := range money {
		result[k] = v
	}
	if g.Result, err = json.Marshal(result); err != nil {
		return err
	}
	if o.Winner != "" {
		g.WinnerID = &o.Winner
	}
	g.EndedAt, g.Deadline = &now, nil
	if _, err := tx.NewUpdate().Model(g).Column("status", "result", "winner_id", "ended_at", "deadline").WherePK().Exec(ctx); err != nil {
		return err
	}
	if _, err := tx.NewDelete().Model((*presence)(nil)).Where("game_id = ?", g.ID).Exec(ctx); err != nil {
		return err
	}
	data := map[string]any{"gameId": g.ID, "status": g.Status}
	for k, v := range result {
		data[k] = v
	}
	return AppendEvents(ctx, tx, g.ID, now, rules.Event{Name: "game:completed", Data: data})
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ExpireDue applies the timeout rules to every active game whose deadline
// has passed. Each game is claimed with FOR UPDATE SKIP LOCKED, so any
// number of instances can run it at once; deadlines live in the database,
// so they survive restarts. It returns how many games it advanced.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	done := 0
	for {
		claimed := false
		err := db.ReadCommitted(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
			var g Game
			err := tx.NewSelect().Model(&g).Where("status = 'active' AND deadline <= ?", s.now()).
				Order("deadline").Limit(1).For("UPDATE SKIP LOCKED").Scan(ctx)
			if err != nil {
				return ignoreNoRows(err)
			}
			claimed = true
			players, err := playerIDs(ctx, tx, g.ID)
			if err != nil {
				return err
			}
			return s.advance(ctx, tx, &g, players, func(st rules.State, now time.Time) ([]rules.Event, error) {
				return st.Expire(now), nil
			}, nil)
		})
		if err != nil || !claimed {
			return done, err
		}
		done++
	}
}
