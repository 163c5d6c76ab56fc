package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"wager/db"
	"wager/domain"

	"github.com/uptrace/bun"

	"wager/web/live"
)

// actionKey marks the context of the requests a test makes, so that the
// statements they send can be told from any other.
type actionKey struct{}

// liveQueries records, while on, the statements bun sends but for the
// background ones: those sent for a request of the test's, and the others.
type liveQueries struct {
	mu     sync.Mutex
	on     bool
	others []string
	ours   int
}

func (q *liveQueries) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (q *liveQueries) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case !q.on || background(e.Query):
	case ctx.Value(actionKey{}) != nil:
		q.ours++
	default:
		q.others = append(q.others, e.Query)
	}
}

// apiEvent is an API socket's event frame.
type apiEvent struct {
	Type  string           `json:"type"`
	Event domain.EventName `json:"event"`
	Seq   int              `json:"seq"`
	Data  json.RawMessage  `json:"data"`
}

// watcher is a page's and an API socket's membership of a game's room,
// and what they received.
type watcher struct {
	a          *testApp
	game       string
	page, api  *live.Conn
	queries    *liveQueries
	events     map[int]apiEvent // by seq, as the API socket got them
	lastPage   string           // the last fragment of every panel the page got
	lastPageAt int
}

// watch joins a page and an API socket of viewer to the game's room, and
// starts marking the test's requests.
func (a *testApp) watch(t *testing.T, game, viewer string) *watcher {
	t.Helper()
	ctx := context.Background()
	m, err := a.Games.Metadata(ctx, game)
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{a: a, game: game, page: live.NewConn(viewer, live.HTML), api: live.NewConn(viewer, live.JSON),
		queries: &liveQueries{}, events: map[int]apiEvent{}}
	for _, c := range []*live.Conn{w.page, w.api} {
		if err := a.Live.Join(ctx, c, domain.GameStreamOf(game), m.LastSeq, m.LastSeq, false, 0); err != nil {
			t.Fatal(err)
		}
	}
	db.AddQueryHook(a.DB, w.queries)
	a.ctx = context.WithValue(ctx, actionKey{}, true)
	return w
}

var (
	pageSeq   = regexp.MustCompile(`id="live-seq" data-seq="(\d+)"`)
	timerText = regexp.MustCompile(`data-timer-text>\d+s<`)
)

// step does what a test's requests do, then waits until both sockets have
// every event they caused, and wants no statement sent meanwhile but the
// requests' own: the room renders for pages and API sockets from memory.
// Then the page's panels must be what a page renders from the database
// now: following the events, the page shows what a reload would.
func (w *watcher) step(t *testing.T, what string, do func()) {
	t.Helper()
	w.queries.mu.Lock()
	w.queries.on, w.queries.others, w.queries.ours = true, nil, 0
	w.queries.mu.Unlock()
	do()
	last, _ := w.a.Live.LatestSeq(w.game)
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		select {
		case f := <-w.api.Frames():
			var e apiEvent
			if err := json.Unmarshal(f, &e); err != nil {
				t.Fatalf("%s: API frame %s: %v", what, f, err)
			}
			if e.Type == "event" && e.Seq > 0 {
				w.events[e.Seq] = e
			}
			got = e.Seq == last
		case <-deadline:
			t.Fatalf("%s: the API socket did not get event %d", what, last)
		}
	}
	for got := false; !got; {
		select {
		case f := <-w.page.Frames():
			s := string(f)
			m := pageSeq.FindStringSubmatch(s)
			if m == nil {
				continue // a spectator count
			}
			seq, _ := strconv.Atoi(m[1])
			if strings.Contains(s, `id="scoreboard"`) {
				w.lastPage, w.lastPageAt = s, seq
			}
			got = seq == last
		case <-deadline:
			t.Fatalf("%s: the page did not get event %d", what, last)
		}
	}
	w.queries.mu.Lock()
	w.queries.on = false
	others, ours := w.queries.others, w.queries.ours
	w.queries.mu.Unlock()
	if ours == 0 {
		t.Fatalf("%s: the requests sent no statement: they were not marked", what)
	}
	if len(others) > 0 {
		t.Errorf("%s: %d statements besides the requests' own reached the database:\n%s", what, len(others), strings.Join(others, "\n"))
	}
	if w.lastPageAt == 0 {
		return
	}
	fresh, err := w.a.HTTP.Views.Open(context.Background(), w.game)
	if err != nil {
		t.Fatal(err)
	}
	e := w.events[w.lastPageAt]
	html, ok := fresh.Events([]live.Event{{Stream: domain.GameStreamOf(w.game), Seq: e.Seq, Name: e.Event, Data: e.Data}})
	if !ok {
		t.Fatalf("%s: a fresh page state did not render event %d", what, e.Seq)
	}
	got, want := timerText.ReplaceAllString(w.lastPage, ""), timerText.ReplaceAllString(string(html[0]), "")
	if got != want {
		t.Errorf("%s: the page followed the events to\n%s\nwhere a page read from the database now shows\n%s", what, got, want)
	}
}

// TestLivePagesFollowTheGameWithoutReadingTheDatabase plays a staked game
// with bets, a donation, a market order and chat, held for review at its
// end, released, and rematched, while a page and an API socket watch:
// after a commit nothing more reaches the database for them, and the page
// shows what a page read from the database shows (the scoreboard, the
// pools, the result card with each player's line and rating change, the
// review, the settlement's transfers, the rematch).
func TestLivePagesFollowTheGameWithoutReadingTheDatabase(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)
	p1, p2 := a.depositor(t, 2_000_000), a.depositor(t, 2_000_000)
	lobby := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 1000000, "settings": {"rounds": 3, "roundSeconds": 120}}`)
	a.join(t, p1, lobby)
	game := a.join(t, p2, lobby)["gameId"].(string)
	s1, s2 := a.spectatorWith(t, 3_000_000), a.spectatorWith(t, 3_000_000)
	trader := a.depositor(t, 1_000_000)
	w := a.watch(t, game, a.newPlayer(t).id)

	ok := func(what string, r response) {
		t.Helper()
		if r.Code != http.StatusOK && r.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", what, r.Code, r.Body)
		}
	}
	w.step(t, "a bet", func() { a.bet(t, s1, game, p2.id, 2_500_000) })
	w.step(t, "a bet on the other player", func() { a.bet(t, s2, game, p1.id, 1_000_000) })
	w.step(t, "a donation", func() {
		r, _ := a.donate(t, s2, game, 200_000)
		ok("donate", r)
	})
	w.step(t, "a market order", func() { a.placed(t, trader, game, "buy", p1.id, 600_000, 1, "") })
	w.step(t, "a chat message", func() { a.said(t, s1, "game", game, "good luck") })
	w.step(t, "a move", func() { ok("move", a.act(t, p1, game, `{"type": "move", "move": "rock"}`)) })
	w.step(t, "the move that reveals the round", func() { ok("move", a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)) })
	w.step(t, "a resignation that ends the game, held for review", func() { ok("resign", a.act(t, p2, game, `{"type": "resign"}`)) })
	for _, want := range []string{"You won", "You lost", "Your rating: ", "The result is under review", "0.20 USDC moved from the pot"} {
		if !strings.Contains(w.lastPage, want) {
			t.Errorf("the result card lacks %q:\n%s", want, w.lastPage)
		}
	}
	w.step(t, "the settlement's transfers confirmed", func() {
		if n, err := a.Settlement.ProcessTransfers(a.ctx); err != nil || n == 0 {
			t.Fatalf("process transfers: %d confirmed, %v", n, err)
		}
	})
	w.step(t, "the review released", func() {
		ok("release", a.do(t, request{method: http.MethodPost, path: "/admin/integrity/" + game + "/release", header: admin.auth,
			body: `{"reason": "the resignation came after a fair first round"}`}))
	})
	rematch := func(p player, method string) func() {
		return func() {
			ok("rematch", a.do(t, request{method: method, path: "/games/" + game + "/rematch", header: p.auth}))
		}
	}
	w.step(t, "a rematch asked", rematch(p1, http.MethodPost))
	w.step(t, "the request withdrawn", rematch(p1, http.MethodDelete))
	w.step(t, "the other player asks", rematch(p2, http.MethodPost))
	w.step(t, "the rematch accepted", rematch(p1, http.MethodPost))
	if !strings.Contains(w.lastPage, "The rematch has started.") {
		t.Errorf("the rematch panel does not say it started:\n%s", w.lastPage)
	}
}
