package handlers_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"

	"wager/db"

	"github.com/uptrace/bun"

	"wager/domain/game"
)

// background reports the statements an instance sends on its own: the
// hub's presence (spectator counts and who is online, every second), its
// check for missed events, announcements, and the reload of revoked
// tokens that another instance's sign-out triggers.
func background(query string) bool {
	return strings.Contains(query, "instance_presence") || strings.Contains(query, "online_users") ||
		strings.HasPrefix(query, `SELECT "id", "seq" FROM "games"`) || strings.HasPrefix(query, `SELECT "id", "seq" FROM games WHERE (id = ANY(`) ||
		strings.HasPrefix(query, "SELECT pg_notify") ||
		strings.HasPrefix(query, `SELECT "jti", "expires_at" FROM "revoked_tokens" WHERE (expires_at >`)
}

// statementLog records the round trips bun sends from one goroutine's
// calls, leaving out the background ones: each query bun runs is one
// round trip (BEGIN and COMMIT included), however many statements its
// text holds.
type statementLog struct {
	mu   sync.Mutex
	on   bool
	list []string
}

func (l *statementLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (l *statementLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.on && !background(e.Query) {
		l.list = append(l.list, e.Query)
	}
}

func (l *statementLog) record(fn func()) []string {
	l.mu.Lock()
	l.on, l.list = true, nil
	l.mu.Unlock()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.list
}

// statements counts the SQL statements of one round trip's text: those
// separated by semicolons outside quoted strings and identifiers.
func statements(query string) int {
	n, pending := 0, false
	var quote rune
	for _, r := range query {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0 // a doubled quote closes and reopens: the same count
			}
		case r == '\'' || r == '"':
			quote, pending = r, true
		case r == ';':
			if pending {
				n++
			}
			pending = false
		case !unicode.IsSpace(r):
			pending = true
		}
	}
	if pending {
		n++
	}
	return n
}

// budget is what one operation may cost the database: statements, and
// round trips (a BEGIN, a COMMIT, and a text of several statements sent
// at once each count one).
type budget struct {
	what                   string
	sent                   []string // the round trips, as statementLog records them
	statements, roundTrips int
}

// checkBudgets fails t for each operation over its budget, listing what
// it sent.
func checkBudgets(t *testing.T, budgets ...budget) {
	t.Helper()
	for _, b := range budgets {
		n := 0
		for _, q := range b.sent {
			n += statements(q)
		}
		t.Logf("%s: %d statements in %d round trips", b.what, n, len(b.sent))
		if testing.Verbose() && os.Getenv("SHOW_SQL") != "" {
			t.Log(strings.Join(b.sent, "\n-- next\n"))
		}
		if n > b.statements || len(b.sent) > b.roundTrips {
			t.Errorf("%s takes %d statements in %d round trips, over its budget of %d in %d:\n%s", b.what, n, len(b.sent),
				b.statements, b.roundTrips, strings.Join(b.sent, "\n-- next round trip\n"))
		}
	}
}

// The write path's statements and round trips are a budget: a change
// that adds round trips to matchmaking, a game's start or a move fails
// here, with what it sent listed.
func TestStatementsOfAMoveAndAGameStart(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	db.AddQueryHook(a.DB, log)
	ctx := context.Background()
	p1, p2 := a.newPlayer(t), a.newPlayer(t)
	var l game.Lobby
	create := log.record(func() {
		var err error
		if l, err = a.Games.CreateLobby(ctx, p1.id, "rps", 0, nil); err != nil {
			t.Fatal(err)
		}
	})
	wait := log.record(func() {
		if r, err := a.Games.JoinQueue(ctx, p1.id, l.ID); err != nil || r.Status != "queued" {
			t.Fatalf("join: %+v %v", r, err)
		}
	})
	var gameID string
	start := log.record(func() {
		r, err := a.Games.JoinQueue(ctx, p2.id, l.ID)
		if err != nil || r.Status != "matched" {
			t.Fatalf("join: %+v %v", r, err)
		}
		gameID = r.GameID
	})
	moveOf := func(p player, choice string) func() {
		return func() {
			if _, err := a.Games.Act(ctx, p.id, gameID, game.Action{Type: "move", Move: []byte(`"` + choice + `"`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := log.record(moveOf(p1, "rock"))
	next := log.record(moveOf(p2, "rock")) // a drawn round: the game goes on
	checkBudgets(t,
		budget{"a lobby's creation", create, 1, 1},
		// One statement outside any transaction: the user queued unless
		// someone waits (the queue's index refuses a second), with the
		// lobby and whoever waits read.
		budget{"a join that waits", wait, 1, 1},
		// That statement, then one more: the waiting player's queue place
		// and the joiner's presence, the game, its seats and its opening
		// events, all or nothing.
		budget{"a free game's start (a join that matches)", start, 2, 2},
		budget{"a game's first move", first, 2, 2}, // the game read, then its state and events stored if nothing changed
		budget{"a move after it", next, 1, 1},      // the game from memory
	)
}

// The statement counter counts statements, not what their strings hold.
func TestStatementsCountsStatementsOutsideQuotes(t *testing.T) {
	for q, want := range map[string]int{
		"BEGIN":                      1,
		"SELECT 1; SELECT 2;":        2,
		`SELECT ';', "a;b" FROM t;;`: 1,
		"INSERT INTO t VALUES ('it''s; fine');\nDELETE FROM t": 2,
	} {
		if got := statements(q); got != want {
			t.Errorf("statements(%q) = %d, want %d", q, got, want)
		}
	}
}

// An API request's bearer token and a page's session are checked from
// memory once the instance has seen the user.
func TestAuthenticationReadsNoDatabaseOnceTheUserIsKnown(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	db.AddQueryHook(a.DB, log)
	ctx := context.Background()
	p := a.newPlayer(t)
	cookie, _, err := a.Auth.StartSession(ctx, p.id)
	if err != nil {
		t.Fatal(err)
	}
	token := tokenOf(p)
	first := log.record(func() {
		if _, err := a.Auth.Authenticate(ctx, token, p.auth["X-App-Id"]); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Auth.SessionPrincipal(ctx, cookie); err != nil {
			t.Fatal(err)
		}
	})
	again := log.record(func() {
		for i := 0; i < 10; i++ {
			if pr, err := a.Auth.Authenticate(ctx, token, p.auth["X-App-Id"]); err != nil || pr.UserID != p.id || pr.Username == "" {
				t.Fatalf("token: %+v %v", pr, err)
			}
			if pr, err := a.Auth.SessionPrincipal(ctx, cookie); err != nil || pr.UserID != p.id || pr.CSRFToken == "" {
				t.Fatalf("session: %+v %v", pr, err)
			}
		}
	})
	if len(first) == 0 || len(again) != 0 {
		t.Fatalf("authentication read the database %d times for a new user and %d times for 20 more requests, want some and none:\n%s",
			len(first), len(again), strings.Join(again, "\n"))
	}
	if err := a.Auth.EndSession(ctx, cookie); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Auth.SessionPrincipal(ctx, cookie); err == nil {
		t.Fatal("a session ended on this instance is still accepted")
	}
}

// BenchmarkConcurrentMoves plays moves in 64 games at once through the game
// service (no HTTP): both players always choose rock, so rounds are drawn
// and the games never end.
func BenchmarkConcurrentMoves(b *testing.B) {
	a := newTestApp(b, noWorkers)
	ctx := context.Background()
	type seat struct{ player, game string }
	var seats []seat
	for i := 0; i < 64; i++ {
		p1, p2, g := a.match(b, `{"rounds": 9, "roundSeconds": 120}`)
		seats = append(seats, seat{p1.id, g}, seat{p2.id, g})
	}
	var next atomic.Int64
	rock := []byte(`"rock"`)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// Players of one game take turns: one game per goroutine at a time.
			i := int(next.Add(1)) % len(seats)
			s := seats[i]
			_, err := a.Games.Act(ctx, s.player, s.game, game.Action{Type: "move", Move: rock})
			if err != nil && !strings.Contains(err.Error(), "ALREADY_MOVED") {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "moves/s")
}

// The hot public reads answer from memory while nothing happened in the
// game, and show an event as soon as the instance hears of it, its own or
// another instance's.
func TestHotReadsComeFromMemoryAndFollowEvents(t *testing.T) {
	shared := map[string]string{"JWT_SECRET": testSecret, "WORKERS": "false"}
	a, other := newTestApp(t, shared), newTestApp(t, shared)
	log := &statementLog{}
	db.AddQueryHook(a.DB, log)
	p1, p2, gameID := a.match(t, `{"rounds": 3, "roundSeconds": 60}`)
	read := func() (GameState, []string) {
		var st GameState
		statements := log.record(func() {
			r := a.do(t, request{path: "/games/" + gameID})
			if r.Code != 200 || jsonDecode(r.Body.Bytes(), &st) != nil {
				t.Fatalf("GET /games/%s: %d %s", gameID, r.Code, r.Body)
			}
			if r := a.do(t, request{path: "/games/" + gameID + "/state", header: p1.auth}); r.Code != 200 {
				t.Fatalf("GET state: %d %s", r.Code, r.Body)
			}
		})
		return st, statements
	}
	read()
	if _, statements := read(); len(statements) != 0 {
		t.Errorf("a game nothing happened in was read again:\n%s", strings.Join(statements, "\n"))
	}
	a.act(t, p1, gameID, `{"type": "move", "move": "rock"}`)
	if st, _ := read(); st.LastSeq == 0 || st.Status != "active" {
		t.Fatalf("after a move: %+v", st)
	}
	before, _ := read()
	// A move through another instance: this one hears of it by announcement.
	if r := other.act(t, p2, gameID, `{"type": "move", "move": "paper"}`); r.Code != 200 {
		t.Fatalf("move through the other instance: %d %s", r.Code, r.Body)
	}
	waitFor(t, func() bool { st, _ := read(); return st.LastSeq > before.LastSeq })
	// A game that ends shows its result at once on the instance that ended it.
	a.act(t, p1, gameID, `{"type": "resign"}`)
	var st GameState
	if r := a.do(t, request{path: "/games/" + gameID}); r.Code != 200 || jsonDecode(r.Body.Bytes(), &st) != nil || st.Status != "completed" {
		t.Fatalf("after a resignation: %d %s, want completed", r.Code, r.Body)
	}
}

// GameState is what these tests read of GET /games/:id.
type GameState struct {
	Status  string `json:"status"`
	LastSeq int    `json:"lastSeq"`
}

// A market order's statements are a budget too: one order is one
// transaction whose statements do not grow with the trades it makes.
func TestStatementsOfAMarketOrder(t *testing.T) {
	a := newTestApp(t, roomyMarkets)
	p1, p2, gameID := a.marketGame(t, `{"rounds": 1}`)
	t1, t2 := a.depositor(t, 10_000_000), a.depositor(t, 10_000_000)
	log := &statementLog{}
	db.AddQueryHook(a.DB, log)
	// The market opens with a mint: t1 holds 10 shares of p1, t2 of p2.
	a.placed(t, t1, gameID, "buy", p1.id, 500_000, 10, "")
	a.placed(t, t2, gameID, "buy", p2.id, 500_000, 10, "")
	resting := log.record(func() {
		for _, price := range []int64{400_000, 410_000, 420_000} {
			a.placed(t, t2, gameID, "buy", p1.id, price, 2, "")
		}
	})
	crossing := log.record(func() { a.placed(t, t1, gameID, "sell", p1.id, 400_000, 1, "") })
	sweeping := log.record(func() { a.placed(t, t1, gameID, "sell", p1.id, 400_000, 5, "") }) // fills 1 + 2 + 2
	for _, c := range []struct {
		what       string
		statements []string
		budget     int
	}{
		// BEGIN, the game and market locked, whether a trader is linked
		// to a player, the crossing orders, the positions, the buyers'
		// balances, the order, its positions, the ledger, the balances
		// told, the book (and prices), the event, COMMIT; crossing resting
		// orders of others adds whether those are linked to a player (a
		// link made since they were placed cancels them), and a trade
		// the trades, the makers' fills and the achievement. Orders that
		// arrive together share them. A batch with a buy reads the
		// buyers' player protection (exclusions, age, loss limits) in two
		// more statements, after their balances are locked: their
		// protection locks, then the read; sells never do.
		{"an order that rests", resting[:len(resting)/3], 15},
		{"an order that trades once", crossing, 17},
		{"an order that trades with three orders", sweeping, 17},
	} {
		t.Logf("%s: %d statements", c.what, len(c.statements))
		if len(c.statements) > c.budget {
			t.Errorf("%s takes %d statements, over its budget of %d:\n%s", c.what, len(c.statements), c.budget,
				strings.Join(c.statements, "\n"))
		}
	}
}

// A game's end settles, records and tells in one transaction; its
// statements and round trips are a budget too (for players who played
// before: their first games unlock achievements, which add notifications
// and feed entries).
func TestStatementsOfAGamesEnd(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	db.AddQueryHook(a.DB, log)
	ctx := context.Background()
	p1, p2 := a.newPlayer(t), a.newPlayer(t)
	var first, end []string
	for i := range 4 {
		l, err := a.Games.CreateLobby(ctx, p1.id, "rps", 0, []byte(`{"rounds": 1}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Games.JoinQueue(ctx, p1.id, l.ID); err != nil {
			t.Fatal(err)
		}
		r, err := a.Games.JoinQueue(ctx, p2.id, l.ID)
		if err != nil || r.Status != "matched" {
			t.Fatalf("join: %+v %v", r, err)
		}
		if _, err := a.Games.Act(ctx, p1.id, r.GameID, game.Action{Type: "move", Move: []byte(`"rock"`)}); err != nil {
			t.Fatal(err)
		}
		end = log.record(func() {
			if _, err := a.Games.Act(ctx, p2.id, r.GameID, game.Action{Type: "move", Move: []byte(`"scissors"`)}); err != nil {
				t.Fatal(err)
			}
		})
		if i == 0 {
			first = end
		}
	}
	// BEGIN; the game locked; one read of what the settlement, the
	// notifications (their ids and unread counts), the ratings (created
	// and locked), the achievements (which the players have, the winner's
	// streak) and the feed (names, the entry's id) need; the state and
	// events, sent with the writes queued meanwhile (the settlement, both
	// notifications, the results with the new ratings, their history and
	// the leaderboard, the winner's feed entry, presence, the game queued
	// for the public log); COMMIT. (A free game has no market to look
	// for.)
	// The players' first game unlocks three achievements (the first game
	// of each, the winner's first win): their unlock, then their
	// notifications (after the queued writes, so that the unread counts
	// include them) and their feed entries, whatever their number.
	checkBudgets(t, budget{"a free game's end", end, 11, 5}, budget{"a first free game's end", first, 14, 9})
}

// A staked game's start locks both stakes; player protection adds two
// statements to it, for both players together: their protection locks,
// then the read. Its end pays the winner and the fee.
func TestStatementsOfAStakedGame(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	db.AddQueryHook(a.DB, log)
	ctx := context.Background()
	p1, p2 := a.depositor(t, 10_000_000), a.depositor(t, 10_000_000)
	var end []string
	for i := range 2 {
		var l game.Lobby
		create := log.record(func() {
			var err error
			if l, err = a.Games.CreateLobby(ctx, p1.id, "rps", 1_000_000, []byte(`{"rounds": 1}`)); err != nil {
				t.Fatal(err)
			}
		})
		wait := log.record(func() {
			if r, err := a.Games.JoinQueue(ctx, p1.id, l.ID); err != nil || r.Status != "queued" {
				t.Fatalf("join: %+v %v", r, err)
			}
		})
		var gameID string
		start := log.record(func() {
			r, err := a.Games.JoinQueue(ctx, p2.id, l.ID)
			if err != nil || r.Status != "matched" {
				t.Fatalf("join: %+v %v", r, err)
			}
			gameID = r.GameID
		})
		if _, err := a.Games.Act(ctx, p1.id, gameID, game.Action{Type: "move", Move: []byte(`"rock"`)}); err != nil {
			t.Fatal(err)
		}
		end = log.record(func() {
			if _, err := a.Games.Act(ctx, p2.id, gameID, game.Action{Type: "move", Move: []byte(`"scissors"`)}); err != nil {
				t.Fatal(err)
			}
		})
		if i == 0 {
			continue // the players' first staked game unlocks achievements
		}
		checkBudgets(t,
			budget{"a staked lobby's creation", create, 2, 2}, // player protection, the lobby
			// The free join's statement (which finds the lobby staked),
			// BEGIN, the lobby, its queue, player protection (its lock,
			// its read), the joiner's balance, the queue place, COMMIT.
			budget{"a staked join that waits", wait, 9, 9},
			// The free join's statement, BEGIN, the lobby, its queue,
			// player protection of both players (the locks, the read),
			// the joining and the waiting player's balances, the game with
			// its seats and events, both stakes' posting, the balances
			// told, the wallet history lines (queued, sent before the
			// COMMIT), COMMIT.
			budget{"a staked game's start", start, 14, 13},
			// As a free game's, with the pools, the market and who bet or
			// traded read with the rest; then the ledger's posting and the
			// balances it tells, each player's referrers (one statement each)
			// and the look for a market, before the state and events and
			// the queued writes (the wallet history line and the game
			// queued for the public log among them).
			budget{"a staked game's end", end, 17, 10},
		)
	}
}
