package game

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/room"
)

// newGame is what starting a game needs.
type newGame struct {
	lobbyID   *string
	fromQueue bool // players waiting in the lobby's queue leave it for the game
	rematchOf *string
	gameType  string
	stake     int64
	settings  json.RawMessage
	players   []string // seat order

	// tournament is the tournament the game is played in (nil: none).
	tournament *string
}

// Started is the data of game:started.
type Started struct {
	GameID     string          `json:"gameId"`
	GameType   string          `json:"gameType"`
	Players    []Seat          `json:"players"`
	StakeMinor int64           `json:"stakeMinor"`
	Settings   json.RawMessage `json:"settings" schema:"GameSettings"`
	// TournamentID is the tournament the game is played in.
	TournamentID *string `json:"tournamentId,omitempty" doc:"the tournament the game is played in, when it is a tournament's"`
}

// Matched is the data of the game:matched notice to both players.
type Matched struct {
	GameID   string `json:"gameId"`
	GameType string `json:"gameType"`
}

// startGame creates an active game inside tx: it marks the players busy
// (CONFLICT when one already plays), locks their stakes
// (INSUFFICIENT_FUNDS when one cannot cover it), starts the rules, stores
// the opening events and tells the players. Its callers (a queue's match,
// a challenge accepted, a rematch agreed) have asked player protection
// about every player's stake in the same transaction.
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
		return Game{}, fmt.Errorf("encode the state of new game %s: %w", id, err)
	}
	g := Game{ID: id, LobbyID: n.lobbyID, RematchOf: n.rematchOf, GameType: n.gameType, StakeMinor: n.stake,
		Settings: n.settings, Status: StatusActive, State: raw, CreatedAt: now, TournamentID: n.tournament}
	if d := state.Deadline(); !d.IsZero() {
		g.Deadline = &d
	}
	// One statement: the game, its seats, and its players marked busy
	// (taken out of the lobby's queue when they wait there; anyone already
	// in another queue or a game is not, and the start is refused).
	var queue *string
	if n.fromQueue {
		queue = n.lobbyID
	}
	var seats []struct {
		Seat
		Busy int `bun:"busy"`
	}
	err = tx.NewRaw(`WITH g AS (INSERT INTO games (id, lobby_id, game_type, stake_minor, settings, status, state, deadline, rematch_of, created_at, tournament_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)),
		p AS (INSERT INTO game_players (game_id, user_id, seat)
			SELECT ?, t.u, t.o - 1 FROM unnest(?::uuid[]) WITH ORDINALITY AS t (u, o) RETURNING user_id, seat),
		escrow AS (INSERT INTO platform_addresses (address, kind) VALUES (?, 'escrow') ON CONFLICT DO NOTHING),
		busy AS (INSERT INTO user_presence (user_id, kind, game_id, since) SELECT unnest(?::uuid[]), 'game', ?, ?
			ON CONFLICT (user_id) DO UPDATE SET kind = 'game', game_id = EXCLUDED.game_id, lobby_id = NULL, since = EXCLUDED.since
			WHERE user_presence.kind = 'queue' AND user_presence.lobby_id = ?
			RETURNING user_id)
		SELECT p.user_id, u.username, p.seat, (SELECT count(*) FROM busy) AS busy FROM p JOIN users AS u ON u.id = p.user_id ORDER BY p.seat`,
		id, n.lobbyID, n.gameType, n.stake, string(n.settings), StatusActive, string(raw), g.Deadline, n.rematchOf, now, n.tournament,
		id, pgdialect.Array(n.players), s.escrowOf(id), pgdialect.Array(n.players), id, now, queue).Scan(ctx, &seats)
	if err != nil {
		return Game{}, fmt.Errorf("start game %s: %w", id, err)
	}
	if len(seats) != len(n.players) || seats[0].Busy != len(n.players) {
		return Game{}, domain.Errorf(domain.CodeConflict, "a player is already in a queue or a game")
	}
	started := Started{GameID: id, GameType: n.gameType, StakeMinor: n.stake, Settings: n.settings, TournamentID: n.tournament}
	for _, p := range seats {
		started.Players = append(started.Players, p.Seat)
	}
	if n.stake > 0 {
		for _, uid := range n.players {
			if err := lockStake(ctx, tx, s.rooms, id, uid, n.stake, now); err != nil {
				return Game{}, err
			}
		}
	}
	rows, err := s.rooms.Append(ctx, tx, id, now, append([]rules.Event{{Name: "game:started", Data: started}}, events...)...)
	if err != nil {
		return Game{}, err
	}
	g.Seq, g.Seats, g.Players = rows[len(rows)-1].Seq, started.Players, n.players
	if err := db.AfterCommit(ctx, func() { s.seatCache.put(id, g.Seats); s.rows.Put(id, g.Seq, g, time.Now()) }); err != nil {
		return Game{}, err
	}
	for _, uid := range n.players {
		if err := s.rooms.Tell(ctx, uid, "game:matched", Matched{GameID: id, GameType: n.gameType}); err != nil {
			return Game{}, err
		}
	}
	return g, nil
}

// lockStake moves a player's stake from their available to their locked
// balance (INSUFFICIENT_FUNDS when it does not cover it); tell is told the
// player's new balance.
func lockStake(ctx context.Context, tx bun.Tx, tell money.Teller, gameID, userID string, stake int64, now time.Time) error {
	if _, ok, err := covers(ctx, tx, userID, stake); err != nil {
		return err
	} else if !ok {
		return domain.Errorf(domain.CodeInsufficientFunds, "a player's balance does not cover the %s USDC stake",
			money.FormatUSDC(stake))
	}
	if _, err := money.Post(ctx, tx, tell, money.Posting{Kind: "stake", Reference: "stake:" + gameID + ":" + userID, At: now,
		Entries: []money.Entry{{Account: money.Available(userID), Amount: -stake}, {Account: money.Locked(userID), Amount: stake}}}); err != nil {
		return fmt.Errorf("lock the stake of %s in game %s: %w", userID, gameID, err)
	}
	return money.RecordActivity(ctx, tx, money.Activity{UserID: userID, Kind: money.KindStake, AmountMinor: -stake,
		Counterparty: "game " + gameID, GameID: gameID}, now)
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
//
// A move that does not end the game is one statement: the new state and
// events are stored only if the game's last event is still the one the
// move was computed from (read from memory when the instance knows it is
// current), and computed again from a fresh read when something happened
// in between. A move that ends the game, and one that keeps meeting
// others, runs in a transaction that locks the game and settles it.
func (s *Service) Act(ctx context.Context, userID, gameID string, a Action) (ActResult, error) {
	if a.Type != "move" && a.Type != "resign" {
		return ActResult{}, domain.Invalid(map[string]string{"type": "must be move or resign"})
	}
	step := func(st rules.State, now time.Time) ([]rules.Event, error) {
		if a.Type == "resign" {
			return st.Resign(userID, now)
		}
		if len(a.Move) == 0 {
			return nil, domain.Invalid(map[string]string{"move": "required for a move"})
		}
		return st.Move(userID, a.Move, now, s.rand)
	}
	out, done, err := s.actAtOnce(ctx, userID, gameID, step)
	if err == nil && !done {
		out, err = s.actLocked(ctx, userID, gameID, step)
	}
	if err != nil {
		return out, fmt.Errorf("%s in game %s: %w", a.Type, gameID, err)
	}
	return out, nil
}

// actAtOnce tries the action as one conditional statement. It reports
// false when the action must run locked instead: it ends the game, or
// the game kept changing under it.
func (s *Service) actAtOnce(ctx context.Context, userID, gameID string, step func(rules.State, time.Time) ([]rules.Event, error)) (ActResult, bool, error) {
	tried := -1 // the seq of the row the last attempt was computed from
	for attempt := 0; attempt < 3; attempt++ {
		// The remembered row, unless it is the one just tried: the other
		// player's move stored a moment ago is usually remembered already,
		// and only then is the game read.
		g, fresh, err := s.gameAfter(ctx, gameID, tried)
		if err != nil {
			return ActResult{}, false, err
		}
		tried = g.Seq
		if err := checkActor(g, userID); err != nil {
			return ActResult{}, false, err
		}
		r, err := rulesOf(g.GameType)
		if err != nil {
			return ActResult{}, false, err
		}
		st, err := r.Load(g.State)
		if err != nil {
			return ActResult{}, false, fmt.Errorf("game %s: %w", g.ID, err)
		}
		now := s.now()
		events, err := step(st, now)
		if err != nil {
			if fresh {
				return ActResult{}, false, err
			}
			continue // the remembered state may be behind: judge on a fresh read
		}
		if st.Outcome().Done || len(events) == 0 {
			return ActResult{}, false, nil
		}
		if g.State, err = st.MarshalJSON(); err != nil {
			return ActResult{}, false, fmt.Errorf("encode the state of game %s: %w", g.ID, err)
		}
		g.Deadline = nil
		if d := st.Deadline(); !d.IsZero() {
			g.Deadline = &d
		}
		rows, err := s.rooms.AppendStep(ctx, room.Step{GameID: g.ID, Seq: g.Seq, Now: now, State: g.State,
			Deadline: g.Deadline, Events: events})
		if err != nil {
			return ActResult{}, false, err
		}
		if rows != nil {
			g.Seq = rows[len(rows)-1].Seq
			s.rows.Put(g.ID, g.Seq, g, time.Now()) // the row as it is now
			return ActResult{Accepted: true, Status: g.Status, Seq: g.Seq}, true, nil
		}
	}
	return ActResult{}, false, nil
}

// actLocked runs the action in a transaction that locks the game.
func (s *Service) actLocked(ctx context.Context, userID, gameID string, step func(rules.State, time.Time) ([]rules.Event, error)) (ActResult, error) {
	var out ActResult
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		g, err := lockGame(ctx, tx, gameID)
		if err != nil {
			return err
		}
		if err := checkActor(g, userID); err != nil {
			return err
		}
		if err := s.advance(ctx, tx, &g, step); err != nil {
			return err
		}
		out = ActResult{Accepted: true, Status: g.Status, Seq: g.Seq}
		return nil
	})
	return out, err
}

// checkActor refuses an action by someone who does not play in the game
// (NOT_A_PLAYER) or in a game that is over (GAME_NOT_ACTIVE).
func checkActor(g Game, userID string) error {
	if !slices.Contains(g.Players, userID) {
		return domain.Errorf(domain.CodeNotAPlayer, "only players may submit actions")
	}
	if g.Status != StatusActive {
		return domain.Errorf(domain.CodeGameNotActive, "the game is %s", g.Status)
	}
	return nil
}

// advance runs one step of a locked game's rules and stores the new state
// and events; when the rules say the game is over it also settles it,
// frees the players and announces game:completed, in the same statement
// as the step's events. g's Seq and Status follow.
func (s *Service) advance(ctx context.Context, tx bun.Tx, g *Game, step func(rules.State, time.Time) ([]rules.Event, error)) error {
	r, err := rulesOf(g.GameType)
	if err != nil {
		return err
	}
	st, err := r.Load(g.State)
	if err != nil {
		return fmt.Errorf("game %s: %w", g.ID, err)
	}
	now := s.now()
	events, err := step(st, now)
	if err != nil {
		return err
	}
	if g.State, err = st.MarshalJSON(); err != nil {
		return fmt.Errorf("encode the state of game %s: %w", g.ID, err)
	}
	g.Deadline = nil
	if d := st.Deadline(); !d.IsZero() {
		g.Deadline = &d
	}
	update := room.Update{Set: "state = ?, deadline = ?", Args: []any{string(g.State), g.Deadline}}
	if o := st.Outcome(); o.Done {
		completed, err := s.finish(ctx, tx, g, o, now)
		if err != nil {
			return err
		}
		events = append(events, completed)
		update.Set += ", status = ?, result = ?, winner_id = ?, ended_at = ?"
		update.Args = append(update.Args, g.Status, g.Result, g.WinnerID, g.EndedAt)
	}
	if len(events) == 0 {
		if _, err := tx.NewUpdate().Model(g).Column("state", "deadline").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("store the state of game %s: %w", g.ID, err)
		}
		return nil
	}
	return s.append(ctx, tx, g, now, update, events...)
}

// append records events of a locked game, with u in the same statement,
// and moves g.Seq to the last.
func (s *Service) append(ctx context.Context, tx bun.Tx, g *Game, now time.Time, u room.Update, events ...rules.Event) error {
	rows, err := s.rooms.AppendUpdating(ctx, tx, g.ID, now, u, events...)
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		g.Seq = rows[len(rows)-1].Seq
	}
	return nil
}

// Completed is the data of game:completed.
type Completed struct {
	GameID string `json:"gameId"`
	Status string `json:"status" doc:"completed, or cancelled when nobody played"`
	Result
}

// finish ends a game exactly once (the caller holds its row lock and
// stores g's new status and result): it pays out, frees the players and
// returns the game:completed event.
func (s *Service) finish(ctx context.Context, tx bun.Tx, g *Game, o rules.Outcome, now time.Time) (rules.Event, error) {
	g.Status = StatusCompleted
	if o.Reason == "abandoned" {
		g.Status = StatusCancelled
	}
	paid, err := s.settle(ctx, tx, *g, g.Players, o)
	if err != nil {
		return rules.Event{}, fmt.Errorf("settle game %s: %w", g.ID, err)
	}
	result := Result{Reason: o.Reason, Draw: o.Winner == "", Settlement: paid}
	if o.Winner != "" {
		result.WinnerID, g.WinnerID = &o.Winner, &o.Winner
	}
	g.Result, g.EndedAt, g.Deadline = &result, &now, nil
	if err := s.notifyCompleted(ctx, tx, *g, result); err != nil {
		return rules.Event{}, fmt.Errorf("notify the players of game %s: %w", g.ID, err)
	}
	for _, r := range s.record {
		if err := r.GameFinished(ctx, tx, *g, o); err != nil {
			return rules.Event{}, fmt.Errorf("record the end of game %s: %w", g.ID, err)
		}
	}
	if _, err := tx.NewDelete().Model((*presence)(nil)).Where("game_id = ?", g.ID).Exec(ctx); err != nil {
		return rules.Event{}, fmt.Errorf("free the players of game %s: %w", g.ID, err)
	}
	return rules.Event{Name: "game:completed", Data: Completed{GameID: g.ID, Status: g.Status, Result: result}}, nil
}

// ExpireDue applies the timeout rules to every active game whose deadline
// has passed. Each game is claimed with FOR UPDATE SKIP LOCKED, so any
// number of instances can run it at once; deadlines live in the database,
// so they survive restarts. It returns how many games it advanced. It
// enforces every deadline that passed, even one that passed while the
// platform was down: the deadline worker runs RunDeadlinesOnce, which
// resumes those first.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	done := 0
	for {
		claimed, err := s.expireOne(ctx, s.now())
		if err != nil || !claimed {
			return done, err
		}
		done++
	}
}

// expireOne applies the timeout rules to one active game whose deadline
// is at or before cutoff, and reports whether there was one.
func (s *Service) expireOne(ctx context.Context, cutoff time.Time) (bool, error) {
	claimed := false
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		claimed = false
		var g Game
		err := tx.NewSelect().Model(&g).ColumnExpr("g.*").
			ColumnExpr("ARRAY(SELECT p.user_id::text FROM game_players AS p WHERE p.game_id = g.id ORDER BY p.seat) AS players").
			Where("g.status = 'active' AND g.deadline <= ?", cutoff).
			Order("g.deadline").Limit(1).For("UPDATE OF g SKIP LOCKED").Scan(ctx)
		if err != nil {
			return ignoreNoRows(err)
		}
		claimed = true
		return s.advance(ctx, tx, &g, func(st rules.State, now time.Time) ([]rules.Event, error) {
			return st.Expire(now), nil
		})
	})
	if err != nil {
		return false, fmt.Errorf("expire game deadlines: %w", err)
	}
	return claimed, nil
}

// RunDeadlines runs the deadline worker (RunDeadlinesOnce) every interval
// until ctx is done.
func (s *Service) RunDeadlines(ctx context.Context, interval time.Duration) {
	domain.Every(ctx, interval, s.log, "run game deadlines", func(ctx context.Context) error {
		_, _, err := s.RunDeadlinesOnce(ctx)
		return err
	})
}
