package handlers_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"wager/domain/game"
)

// background reports the statements an instance sends on its own: the
// hub's presence (spectator counts and who is online, every second), its
// check for missed events, announcements, and the reload of revoked
// tokens that another instance's sign-out triggers.
func background(query string) bool {
	return strings.Contains(query, "instance_presence") || strings.Contains(query, "online_users") ||
		strings.HasPrefix(query, `SELECT "id", "seq" FROM "games"`) || strings.HasPrefix(query, "SELECT pg_notify") ||
		strings.HasPrefix(query, `SELECT "jti", "expires_at" FROM "revoked_tokens" WHERE (expires_at >`)
}

// statementLog records the statements bun sends from one goroutine's
// calls, leaving out the background ones.
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

// The write path's statements are a budget: a change that adds round trips
// to a move or a game start fails here, with the statements listed.
func TestStatementsOfAMoveAndAGameStart(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	//lint:ignore SA1019 the hook must see the running app's own handle, which WithQueryHook would copy
	a.DB.AddQueryHook(log)
	ctx := context.Background()
	p1, p2 := a.newPlayer(t), a.newPlayer(t)
	l, err := a.Games.CreateLobby(ctx, p1.id, "rps", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Games.JoinQueue(ctx, p1.id, l.ID); err != nil {
		t.Fatal(err)
	}
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
	for _, c := range []struct {
		what       string
		statements []string
		budget     int
	}{
		{"a game's first move", first, 2}, // the game read, then its state and events stored if nothing changed
		{"a move after it", next, 1},      // the game from memory
		{"a free game's start", start, 6}, // BEGIN, the lobby, its queue, the game with its seats, its events, COMMIT
	} {
		t.Logf("%s: %d statements", c.what, len(c.statements))
		if len(c.statements) > c.budget {
			t.Errorf("%s takes %d statements, over its budget of %d:\n%s", c.what, len(c.statements), c.budget,
				strings.Join(c.statements, "\n"))
		}
	}
}

// An API request's bearer token and a page's session are checked from
// memory once the instance has seen the user.
func TestAuthenticationReadsNoDatabaseOnceTheUserIsKnown(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	//lint:ignore SA1019 the hook must see the running app's own handle, which WithQueryHook would copy
	a.DB.AddQueryHook(log)
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
	//lint:ignore SA1019 the hook must see the running app's own handle, which WithQueryHook would copy
	a.DB.AddQueryHook(log)
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
	//lint:ignore SA1019 the hook must see the running app's own handle, which WithQueryHook would copy
	a.DB.AddQueryHook(log)
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
		// told, the book (and prices), the event, COMMIT; a trade adds the
		// trades, the makers' fills and the achievement. Orders that
		// arrive together share them. A batch with a buy reads the
		// buyers' player protection (exclusions, age, loss limits) in one
		// more statement, after their balances are locked; sells never do.
		{"an order that rests", resting[:len(resting)/3], 14},
		{"an order that trades once", crossing, 16},
		{"an order that trades with three orders", sweeping, 16},
	} {
		t.Logf("%s: %d statements", c.what, len(c.statements))
		if len(c.statements) > c.budget {
			t.Errorf("%s takes %d statements, over its budget of %d:\n%s", c.what, len(c.statements), c.budget,
				strings.Join(c.statements, "\n"))
		}
	}
}

// A game's end settles, records and tells in one transaction; its
// statements are a budget too (for players who played before: their
// first games unlock achievements, which add notifications and feed
// entries).
func TestStatementsOfAGamesEnd(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	//lint:ignore SA1019 the hook must see the running app's own handle, which WithQueryHook would copy
	a.DB.AddQueryHook(log)
	ctx := context.Background()
	p1, p2 := a.newPlayer(t), a.newPlayer(t)
	var end []string
	for range 4 {
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
	}
	// BEGIN, the game, the settlement's reads and record, both
	// notifications, the ratings created and locked, the results with the
	// new ratings, their history and the leaderboard, the names, the
	// winner's streak, the achievements, the winner's feed entry,
	// presence, the state and events, COMMIT. (A free game has no market
	// to look for.)
	const budget = 14
	t.Logf("a game's end: %d statements", len(end))
	if len(end) > budget {
		t.Errorf("a game's end takes %d statements, over its budget of %d:\n%s", len(end), budget, strings.Join(end, "\n"))
	}
}

// A staked game's start locks both stakes; player protection adds one
// statement to it, for both players together.
func TestStatementsOfAStakedGameStart(t *testing.T) {
	a := newTestApp(t, noWorkers)
	log := &statementLog{}
	//lint:ignore SA1019 the hook must see the running app's own handle, which WithQueryHook would copy
	a.DB.AddQueryHook(log)
	ctx := context.Background()
	p1, p2 := a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	l, err := a.Games.CreateLobby(ctx, p1.id, "rps", 1_000_000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Games.JoinQueue(ctx, p1.id, l.ID); err != nil {
		t.Fatal(err)
	}
	start := log.record(func() {
		if r, err := a.Games.JoinQueue(ctx, p2.id, l.ID); err != nil || r.Status != "matched" {
			t.Fatalf("join: %+v %v", r, err)
		}
	})
	// BEGIN, the lobby, its queue, player protection of both players,
	// the joining and the waiting player's balances, the game with its
	// seats, for each player their balance, the stake's posting, the
	// balances told and the wallet history line, the events, COMMIT.
	const budget = 17
	t.Logf("a staked game's start: %d statements", len(start))
	if len(start) > budget {
		t.Errorf("a staked game's start takes %d statements, over its budget of %d:\n%s", len(start), budget, strings.Join(start, "\n"))
	}
}
