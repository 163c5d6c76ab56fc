package game

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/game/rules"
	"wager/domain/money"
)

// newGame is what starting a game needs.
type newGame struct {
	lobbyID   *string
	waiting   []string // players waiting in the lobby's queue, who leave it for the game (the others must be free)
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
	GameType   string          `json:"gameType" enum:"connect4,rps"`
	Players    []Seat          `json:"players"`
	StakeMinor int64           `json:"stakeMinor"`
	Settings   json.RawMessage `json:"settings" schema:"GameSettings"`
	// TournamentID is the tournament the game is played in.
	TournamentID *string `json:"tournamentId,omitempty" doc:"the tournament the game is played in, when it is a tournament's"`
}

// Matched is the data of the game:matched notice to both players.
type Matched struct {
	GameID   string `json:"gameId"`
	GameType string `json:"gameType" enum:"connect4,rps"`
}

// startGame creates an active game inside tx: it marks the players busy
// (CONFLICT when one already plays), locks their stakes
// (INSUFFICIENT_FUNDS when one cannot cover it), starts the rules, stores
// the opening events and tells the players. Its callers (a queue's match,
// a challenge accepted, a rematch agreed) have asked player protection
// about every player's stake in the same transaction.
func (s *Service) startGame(ctx context.Context, tx db.Tx, n newGame) (Game, error) {
	g, opening, err := s.insertGame(ctx, tx, n)
	if err != nil {
		return Game{}, err
	}
	if n.stake > 0 {
		if err := lockStakes(ctx, tx, s.events, g.ID, n.players, n.stake, g.CreatedAt); err != nil {
			return Game{}, err
		}
	}
	if err := s.events.Opened(tx, opening); err != nil {
		return Game{}, err
	}
	if err := tx.AfterCommit(func() { s.started(g) }); err != nil {
		return Game{}, err
	}
	for _, uid := range n.players {
		if err := s.events.Tell(tx, uid, domain.NoticeMatched, Matched{GameID: g.ID, GameType: n.gameType}); err != nil {
			return Game{}, err
		}
	}
	return g, nil
}

// startFree starts a free game with one statement outside any
// transaction: the players' presence (the first player taken out of the
// lobby's queue, the others marked busy), the game, its seats and its
// opening events all stand together or not at all, and it reports false
// when they did not (a player busy, or no longer waiting), for the caller
// to start it in a transaction instead. The game is published and its
// players told at once.
func (s *Service) startFree(ctx context.Context, n newGame) (Game, bool, error) {
	g, opening, err := s.insertGame(ctx, s.db, n)
	if domain.ErrorCode(err) == domain.CodeConflict {
		return Game{}, false, nil
	}
	if err != nil {
		return Game{}, false, err
	}
	s.started(g)
	p := eventlog.Published{Events: opening.Rows}
	for _, uid := range n.players {
		notice, err := eventlog.NoticeOf(uid, domain.NoticeMatched, Matched{GameID: g.ID, GameType: n.gameType})
		if err != nil {
			return Game{}, false, err
		}
		p.Notices = append(p.Notices, notice)
	}
	s.events.Publish(p)
	return g, true, nil
}

// started remembers a game that started (its row and seats never need
// reading while it is new).
func (s *Service) started(g Game) {
	s.seatCache.put(g.ID, g.Seats)
	s.rows.Put(g.ID, g.Seq, g, time.Now())
}

// insertGameSQL stores a new game $1 at $2: every player's presence
// first, and the game only when all were (the waiting players $3, still
// queued in lobby $4, and the free players $5, who are in no queue or
// game); then its row ($6-$15, a player count of $16), its players $17 in
// seat order, its escrow address $18 and its opening events ($19-$21,
// game:started first, whose data gets the players' names from the
// statement). A presence row naming a game that is not stored fails the
// statement (its foreign key), so nothing of it stays. It answers the
// seats. It is run prepared (see db.QueryPrepared): every game's start
// runs it.
const insertGameSQL = `WITH waited AS (UPDATE user_presence SET kind = 'game', game_id = $1, lobby_id = NULL, since = $2
		WHERE user_id = ANY($3::uuid[]) AND kind = 'queue' AND lobby_id = $4 RETURNING user_id),
	joined AS (INSERT INTO user_presence (user_id, kind, game_id, since) SELECT unnest($5::uuid[]), 'game', $1, $2
		ON CONFLICT (user_id) DO NOTHING RETURNING user_id),
	g AS (INSERT INTO games (id, lobby_id, game_type, stake_minor, settings, status, state, seq, deadline, rematch_of, created_at, tournament_id)
		SELECT $1::uuid, $6::uuid, $7::text, $8::bigint, $9::jsonb, $10::text, $11::jsonb, $12::int, $13::timestamptz, $14::uuid, $2::timestamptz, $15::uuid
		WHERE (SELECT count(*) FROM waited) + (SELECT count(*) FROM joined) = $16 RETURNING id),
	p AS (INSERT INTO game_players (game_id, user_id, seat)
		SELECT g.id, t.u, t.o - 1 FROM g, unnest($17::uuid[]) WITH ORDINALITY AS t (u, o) RETURNING user_id, seat),
	escrow AS (INSERT INTO platform_addresses (address, kind) SELECT $18, 'escrow' FROM g ON CONFLICT DO NOTHING),
	seated AS (SELECT p.user_id, u.username, p.seat, u.bot_account AS bot FROM p JOIN users AS u ON u.id = p.user_id),
	events AS (INSERT INTO game_events (game_id, seq, name, data, created_at)
		SELECT g.id, v.seq, v.name, CASE WHEN v.i = 1 THEN v.data || jsonb_build_object('players', (SELECT json_agg(json_build_object(
				'userId', s.user_id, 'username', s.username, 'seat', s.seat) ORDER BY s.seat) FROM seated AS s)) ELSE v.data END, $2
		FROM g, unnest($19::int[], $20::text[], $21::jsonb[]) WITH ORDINALITY AS v (seq, name, data, i))
	SELECT user_id::text, username, seat, bot FROM seated ORDER BY seat`

// insertGame stores a new game in one statement: the game (its rules
// started), its seats, its escrow address among the platform's, its
// opening events, and its players marked busy (the waiting ones taken
// out of the lobby's queue). The game is stored only if every waiting
// player still waits there and every other player is free: CONFLICT
// when one is not, and then nothing is stored.
func (s *Service) insertGame(ctx context.Context, idb bun.IDB, n newGame) (Game, eventlog.Opening, error) {
	r, err := rulesOf(n.gameType)
	if err != nil {
		return Game{}, eventlog.Opening{}, err
	}
	now := s.now()
	id := uuid.NewString()
	state, events, err := r.Start(id, n.players, n.settings, now)
	if err != nil {
		return Game{}, eventlog.Opening{}, err
	}
	raw, err := state.MarshalJSON()
	if err != nil {
		return Game{}, eventlog.Opening{}, fmt.Errorf("encode the state of new game %s: %w", id, err)
	}
	g := Game{ID: id, LobbyID: n.lobbyID, RematchOf: n.rematchOf, GameType: n.gameType, StakeMinor: n.stake,
		Settings: n.settings, Status: StatusActive, State: raw, CreatedAt: now, Players: n.players, TournamentID: n.tournament,
		decoded: &decodedState{from: raw, st: state}}
	if d := state.Deadline(); !d.IsZero() {
		g.Deadline = &d
	}
	var queue *string
	if len(n.waiting) > 0 {
		queue = n.lobbyID
	}
	// game:started names the players: its data gets their names from the
	// statement that stores it, and the copy published is made the same
	// once it has run.
	started := Started{GameID: id, GameType: n.gameType, StakeMinor: n.stake, Settings: n.settings, TournamentID: n.tournament}
	opening, err := eventlog.OpeningOf(id, now, append([]rules.Event{{Name: domain.EventGameStarted, Data: started}}, events...)...)
	if err != nil {
		return Game{}, eventlog.Opening{}, err
	}
	g.Seq = len(opening.Rows)
	var free []string
	for _, u := range n.players {
		if !slices.Contains(n.waiting, u) {
			free = append(free, u)
		}
	}
	seqs, names, data := opening.Columns()
	err = db.ScanPrepared(ctx, idb, &g.Seats, insertGameSQL, id, now, n.waiting, queue, free,
		n.lobbyID, n.gameType, n.stake, string(n.settings), StatusActive, string(raw), g.Seq, g.Deadline, n.rematchOf, n.tournament,
		len(n.players), n.players, s.escrowOf(id), seqs, names, data)
	if db.IsForeignKeyViolation(err, "user_presence_game_id_fkey") || err == nil && len(g.Seats) != len(n.players) {
		return Game{}, eventlog.Opening{}, domain.Errorf(domain.CodeConflict, "a player is already in a queue or a game")
	}
	if err != nil {
		return Game{}, eventlog.Opening{}, fmt.Errorf("start game %s: %w", id, err)
	}
	started.Players = g.Seats
	if opening.Rows[0].Data, err = json.Marshal(started); err != nil {
		return Game{}, eventlog.Opening{}, fmt.Errorf("encode the start of game %s: %w", id, err)
	}
	return g, opening, nil
}

// lockStakes moves each player's stake from their available to their
// locked balance, all in one posting (INSUFFICIENT_FUNDS when a balance
// does not cover it, without saying whose); tell is told the players' new
// balances. Their wallet history lines are queued with the transaction's
// writes.
func lockStakes(ctx context.Context, tx db.Tx, tell money.Teller, gameID string, players []string, stake int64, now time.Time) error {
	postings := make([]money.Posting, len(players))
	for i, uid := range players {
		postings[i] = money.Posting{Kind: "stake", Reference: "stake:" + gameID + ":" + uid, At: now,
			Entries: []money.Entry{{Account: money.Available(uid), Amount: -stake}, {Account: money.Locked(uid), Amount: stake}}}
	}
	if _, err := money.PostAll(ctx, tx, tell, postings); domain.ErrorCode(err) == domain.CodeInsufficientFunds {
		return domain.Errorf(domain.CodeInsufficientFunds, "a player's balance does not cover the %s USDC stake", money.FormatUSDC(stake))
	} else if err != nil {
		return fmt.Errorf("lock the stakes of game %s: %w", gameID, err)
	}
	for _, uid := range players {
		if err := money.RecordActivityLater(tx, money.Activity{UserID: uid, Kind: money.KindStake, AmountMinor: -stake,
			Counterparty: "game " + gameID, GameID: gameID}, now); err != nil {
			return err
		}
	}
	return nil
}

// Action is a player's action in a game.
type Action struct {
	Type string          `json:"type" enum:"move,resign" doc:"move or resign"`
	Move json.RawMessage `json:"move,omitempty" schema:"GameMove" doc:"game-specific; rps: \"rock\", \"paper\" or \"scissors\"; connect4: {\"column\": 0-6} (or the column alone)"`
}

// ActResult is the answer to an action.
type ActResult struct {
	Accepted bool   `json:"accepted"`
	Status   string `json:"status" enum:"active,completed" doc:"the game's status after the action"`
	Seq      int    `json:"seq" doc:"the game's last event"`
}

// Act applies a player's action. Errors: NOT_FOUND, NOT_A_PLAYER,
// GAME_NOT_ACTIVE, ALREADY_MOVED, NOT_YOUR_TURN, INVALID_MOVE,
// VALIDATION_ERROR (unknown action type).
//
// An action takes one of two paths, which compute the game's next state
// alike (nextState) and differ in how they store it:
//   - at once (actAtOnce), for a move that does not end the game: the
//     compare-and-set step of db/doc.go, one statement batched with other
//     games' moves, computed from the game as the instance remembers it
//     and again from a fresh read when something happened in between;
//   - locked (actLocked), for a move that ends the game, which must settle
//     it in the same transaction, and for one that keeps meeting others:
//     a transaction that locks the game's row.
//
// The locked path alone would be correct, but it costs every move a
// transaction and its round trips instead of a share of one statement.
func (s *Service) Act(ctx context.Context, userID, gameID string, a Action) (ActResult, error) {
	if a.Type != "move" && a.Type != "resign" {
		return ActResult{}, domain.Invalid(map[string]string{"type": "must be move or resign"})
	}
	do := func(st rules.State, now time.Time) ([]rules.Event, error) {
		if a.Type == "resign" {
			return st.Resign(userID, now)
		}
		if len(a.Move) == 0 {
			return nil, domain.Invalid(map[string]string{"move": "required for a move"})
		}
		return st.Move(userID, a.Move, now, s.rand)
	}
	out, done, err := s.actAtOnce(ctx, userID, gameID, do)
	if err == nil && !done {
		out, err = s.actLocked(ctx, userID, gameID, do)
	}
	if err != nil {
		return out, fmt.Errorf("%s in game %s: %w", a.Type, gameID, err)
	}
	return out, nil
}

// Berserk has userID go berserk in a game (rules.State.Berserk): their
// time halves for the rest of it. The arena whose game it is calls it
// (tournament.Service.Berserk). Errors: NOT_FOUND, NOT_A_PLAYER,
// GAME_NOT_ACTIVE, CONFLICT (moved already, berserk already, too late or
// too short to halve).
func (s *Service) Berserk(ctx context.Context, userID, gameID string) (ActResult, error) {
	do := func(st rules.State, now time.Time) ([]rules.Event, error) { return st.Berserk(userID, now) }
	out, done, err := s.actAtOnce(ctx, userID, gameID, do)
	if err == nil && !done {
		out, err = s.actLocked(ctx, userID, gameID, do)
	}
	if err != nil {
		return out, fmt.Errorf("berserk in game %s: %w", gameID, err)
	}
	return out, nil
}

// step is an action as the rules apply it to a game's state at now.
type step func(st rules.State, now time.Time) ([]rules.Event, error)

// next is a game's state after a step, and what the step caused.
type next struct {
	st       rules.State
	state    json.RawMessage
	deadline *time.Time
	events   []rules.Event
}

// nextState applies do to g's state at now; g does not change (it may be
// the instance's remembered row, which others share).
func nextState(g Game, do step, now time.Time) (next, error) {
	r, err := rulesOf(g.GameType)
	if err != nil {
		return next{}, err
	}
	st, err := g.stateToMove(r)
	if err != nil {
		return next{}, fmt.Errorf("game %s: %w", g.ID, err)
	}
	events, err := do(st, now)
	if err != nil {
		return next{}, err
	}
	n := next{st: st, events: events}
	if n.state, err = st.MarshalJSON(); err != nil {
		return next{}, fmt.Errorf("encode the state of game %s: %w", g.ID, err)
	}
	if d := st.Deadline(); !d.IsZero() {
		n.deadline = &d
	}
	return n, nil
}

// actAtOnce tries the action as the compare-and-set step. It reports false
// when the action must run locked instead: it ends the game (or changes
// nothing but the state), or the game kept changing under it.
func (s *Service) actAtOnce(ctx context.Context, userID, gameID string, do step) (ActResult, bool, error) {
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
		now := s.now()
		n, err := nextState(g, do, now)
		if err != nil {
			if fresh {
				return ActResult{}, false, err
			}
			continue // the remembered state may be behind: judge on a fresh read
		}
		if n.st.Outcome().Done || len(n.events) == 0 {
			return ActResult{}, false, nil
		}
		rows, err := s.appendStep(ctx, stepRow{GameID: g.ID, Seq: g.Seq, Now: now, State: n.state,
			Deadline: n.deadline, Events: n.events})
		if err != nil {
			return ActResult{}, false, err
		}
		if rows != nil {
			g.Seq, g.State, g.Deadline = rows[len(rows)-1].Seq, n.state, n.deadline
			g.decoded = &decodedState{from: n.state, st: n.st}
			s.rows.Put(g.ID, g.Seq, g, time.Now()) // the row as it is now
			return ActResult{Accepted: true, Status: g.Status, Seq: g.Seq}, true, nil
		}
	}
	return ActResult{}, false, nil
}

// actLocked runs the action in a transaction that locks the game.
func (s *Service) actLocked(ctx context.Context, userID, gameID string, do step) (ActResult, error) {
	var out ActResult
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		g, err := lockGame(ctx, tx, gameID)
		if err != nil {
			return err
		}
		if err := checkActor(g, userID); err != nil {
			return err
		}
		if err := s.advance(ctx, tx, &g, do); err != nil {
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
func (s *Service) advance(ctx context.Context, tx db.Tx, g *Game, do step) error {
	now := s.now()
	n, err := nextState(*g, do, now)
	if err != nil {
		return err
	}
	st, events := n.st, n.events
	g.State, g.Deadline = n.state, n.deadline
	update := columns{set: "state = ?, deadline = ?", args: []any{string(g.State), g.Deadline}}
	o := st.Outcome()
	if o.Done {
		completed, err := s.finish(ctx, tx, g, o, now)
		if err != nil {
			return err
		}
		events = append(events, completed)
		update.set += ", status = ?, result = ?, winner_id = ?, ended_at = ?"
		update.args = append(update.args, g.Status, g.Result, g.WinnerID, g.EndedAt)
	}
	if len(events) == 0 {
		if _, err := tx.NewUpdate().Model(g).Column("state", "deadline").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("store the state of game %s: %w", g.ID, err)
		}
		return nil
	}
	// A game's end sends what it queued with its last statement.
	return s.append(ctx, tx, g, now, update, o.Done, events...)
}

// columns are more of a game's row to store in the statement that
// appends its events: assignments of the games table's columns with ?
// placeholders ("state = ?"), and their values.
type columns struct {
	set  string
	args []any
}

// append records events of a locked game, with cols in the same
// statement (the transaction's last one when last: it carries the writes
// queued with db.Tx.Later), and moves g.Seq to the last. The statement
// updates the game's row itself and has the event log store the events
// numbered after the row's new seq (eventlog.Insertion).
func (s *Service) append(ctx context.Context, tx db.Tx, g *Game, now time.Time, cols columns, last bool, events ...rules.Event) error {
	if len(events) == 0 {
		if last {
			return tx.Flush(ctx)
		}
		return nil
	}
	in, err := eventlog.NewInsertion(domain.GameStreamOf(g.ID), now, events...)
	if err != nil {
		return err
	}
	set, args := "seq = seq + ?", []any{len(events)}
	if cols.set != "" {
		set += ", " + cols.set
		args = append(args, cols.args...)
	}
	args = append(args, g.ID)
	query := `WITH r AS (UPDATE games SET ` + set + ` WHERE id = ? RETURNING seq) ` + in.SQL
	var seqs []int
	if last {
		err = tx.QueryAndFlush(ctx, func(r db.Row) error {
			var seq int
			err := r.Scan(&seq)
			seqs = append(seqs, seq)
			return err
		}, query, append(args, in.Args(true)...)...)
	} else {
		err = tx.NewRaw(query, append(args, in.Args(false)...)...).Scan(ctx, &seqs)
	}
	if err != nil {
		return fmt.Errorf("append events to game %s: %w", g.ID, err)
	}
	rows, err := s.events.Stored(tx, in, seqs)
	if err != nil {
		return fmt.Errorf("append events to game %s: %w", g.ID, err)
	}
	g.Seq = rows[len(rows)-1].Seq
	return nil
}

// Completed is the data of game:completed: how the game ended, and what
// its end did that the result card shows.
type Completed struct {
	GameID string `json:"gameId"`
	Status string `json:"status" enum:"completed,cancelled" doc:"completed, or cancelled when nobody played"`
	Result
	Ratings   []RatingChange       `json:"ratings" doc:"what the game did to its players' ratings; empty when it was not rated (cancelled)"`
	Transfers []SettlementTransfer `json:"transfers" doc:"the on-chain transfers its settlement queued (pending); game:settlement:transfer follows each one's confirmation"`
}

// finish ends a game exactly once (the caller holds its row lock and
// stores g's new status and result): its participants (see Participant)
// pay out, tell the players, rate the game and record its end; then the
// players are freed, and finish returns the game:completed event. What
// the participants read goes in one statement, after the game's lock (so
// it sees whatever was committed before the end); what they write without
// reading it back is queued, to go with the statement that stores the
// game's end.
func (s *Service) finish(ctx context.Context, tx db.Tx, g *Game, o rules.Outcome, now time.Time) (rules.Event, error) {
	g.Status = StatusCompleted
	if o.Reason == "abandoned" {
		g.Status = StatusCancelled
	}
	if o.Winner != "" {
		g.WinnerID = &o.Winner
	}
	g.EndedAt, g.Deadline = &now, nil
	e := &Ending{Tx: tx, Game: *g, Outcome: o, Reads: &db.Reads{}, Ratings: []RatingChange{}, Queued: []SettlementTransfer{}}
	writes := make([]EndWrite, 0, len(s.ending))
	for _, p := range s.ending {
		write, err := p.ReadEnd(ctx, e)
		if err != nil {
			return rules.Event{}, fmt.Errorf("end game %s: %w", g.ID, err)
		}
		if write != nil {
			writes = append(writes, write)
		}
	}
	if err := e.Reads.Run(ctx, tx); err != nil {
		return rules.Event{}, fmt.Errorf("read for the end of game %s: %w", g.ID, err)
	}
	e.Game.Result = &Result{Reason: o.Reason, Draw: o.Winner == "", WinnerID: g.WinnerID}
	for _, write := range writes {
		if err := write(ctx, e); err != nil {
			return rules.Event{}, fmt.Errorf("end game %s: %w", g.ID, err)
		}
	}
	g.Result = e.Game.Result
	if err := tx.Later("DELETE FROM user_presence WHERE game_id = ?", g.ID); err != nil {
		return rules.Event{}, fmt.Errorf("free the players of game %s: %w", g.ID, err)
	}
	return rules.Event{Name: domain.EventGameCompleted, Data: Completed{GameID: g.ID, Status: g.Status, Result: *g.Result, Ratings: e.Ratings,
		Transfers: e.Queued}}, nil
}

// endNotices is the game's own participant in its end: it tells each
// player the result (game_result), with ids and unread counts read with
// the other participants' reads.
type endNotices struct{ s *Service }

func (n endNotices) ReadEnd(ctx context.Context, e *Ending) (EndWrite, error) {
	told := n.s.notify.Reserve(e.Tx, e.Reads, e.Game.Players)
	return func(ctx context.Context, e *Ending) error {
		if err := n.s.notifyCompleted(ctx, e.Tx, told, e.Game, *e.Game.Result); err != nil {
			return fmt.Errorf("notify the players: %w", err)
		}
		return nil
	}, nil
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
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
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
