package handlers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/tournament"
)

// Over random sequences of sockets opening and closing (the arena's room
// and game pages), pauses and resumptions, games played or resigned and
// time passing, the arena worker (1) never pairs an entrant who is
// paused, or who has no socket in the arena's room nor in the room of
// their last game of the arena, and pairs every other free entrant but at
// most one; (2) never ends, replaces or scores a game the test did not
// end: a pause leaves the paused player's game active and theirs, and its
// result counts when it is played out.
func TestPairingNeverPairsADisconnectedOrPausedPlayer(t *testing.T) {
	const seeds, steps, entrants = 20, 40, 8
	var st pairingStats
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := newPairingRun(t, seed, entrants, &st)
			r.run(steps)
		})
	}
	if t.Failed() {
		return
	}
	t.Logf("over %d seeds: %+v", seeds, st)
	// Not vacuous: games were paired, some through the last game's page
	// only; entrants were left out for each reason while others were
	// paired in the same run; pauses fell on games in progress, and games
	// with a paused player were played out.
	for name, n := range map[string]int{
		"pairings": st.pairings,
		"pairings of an entrant on their last game's page only":    st.fromLastGamePage,
		"disconnected entrants left out of a run that paired":      st.skippedDisconnected,
		"entrants on an older game's page left out":                st.skippedStalePage,
		"paused, connected entrants left out of a run that paired": st.skippedPaused,
		"pauses during a game":                                     st.pausedInGame,
		"games of a paused player played out":                      st.pausedGamesPlayedOut,
	} {
		if n == 0 {
			t.Errorf("the property is vacuous: no %s over %d seeds of %d steps (%+v)", name, seeds, steps, st)
		}
	}
}

// pairingStats counts what the runs exercised.
type pairingStats struct {
	pairings, fromLastGamePage                           int
	skippedDisconnected, skippedStalePage, skippedPaused int
	pausedInGame, pausedGamesPlayedOut                   int
}

// pairingRun is one seeded run: an arena, its entrants and the model of
// what the test did to them.
type pairingRun struct {
	t        *testing.T
	seed     uint64
	rnd      *rand.Rand
	a        *testApp
	clk      *testClock
	ar       *arena
	ps       []player
	names    map[string]string // user id -> p0, p1, ...
	outsider player
	started  bool
	stats    *pairingStats

	// The model.
	paused   map[string]bool
	current  map[string]string // the game each entrant plays now ("" none)
	lastGame map[string]string // the last game each entrant was paired into
	page     map[string]string // the game whose page (room) the entrant has open ("" none)
	wins     map[string]int
	losses   map[string]int
	games    []string // every game paired, in order
	advanced time.Duration

	step  int
	trace []string
}

func newPairingRun(t *testing.T, seed uint64, n int, st *pairingStats) *pairingRun {
	t.Helper()
	a, clk := tournamentApp(t)
	creator := a.newPlayer(t)
	// Rounds of 2 minutes: no game of a run (which moves the clock at most
	// a minute and a half after the start) can run out of time, so every
	// game ends by the test's own play.
	ar := newArena(t, a, clk, creator, map[string]any{"settings": map[string]any{"rounds": 1, "roundSeconds": 120},
		"durationMinutes": 30})
	r := &pairingRun{t: t, seed: seed, rnd: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), a: a, clk: clk, ar: ar,
		names: map[string]string{}, outsider: a.newPlayer(t), stats: st,
		paused: map[string]bool{}, current: map[string]string{}, lastGame: map[string]string{}, page: map[string]string{},
		wins: map[string]int{}, losses: map[string]int{}}
	for i := range n {
		p := a.newPlayer(t)
		r.ps = append(r.ps, p)
		r.names[p.id] = fmt.Sprintf("p%d", i)
	}
	ar.mustJoin(t, r.ps...) // each entry opens the entrant's socket in the arena's room
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: replay with this seed; what the test did, last first:\n%s", seed, r.history())
		}
	})
	return r
}

func (r *pairingRun) history() string {
	from := max(0, len(r.trace)-60)
	lines := slices.Clone(r.trace[from:])
	slices.Reverse(lines)
	return "  " + strings.Join(lines, "\n  ")
}

func (r *pairingRun) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf("step %d: ", r.step)+fmt.Sprintf(format, args...))
}

func (r *pairingRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, step %d: "+format, append([]any{r.seed, r.step}, args...)...)
}

func (r *pairingRun) name(id string) string { return r.names[id] }

func (r *pairingRun) pick() player { return r.ps[r.rnd.IntN(len(r.ps))] }

// run: a few operations before the start, the start, then steps of one
// to three operations each followed by a run of the worker.
func (r *pairingRun) run(steps int) {
	for range r.rnd.IntN(6) {
		switch r.rnd.IntN(3) {
		case 0:
			r.pause()
		default:
			p := r.pick()
			r.ar.leaveRoom(p.id)
			r.logf("%s leaves the arena's room", r.name(p.id))
		}
	}
	r.clk.advance(2 * time.Minute)
	r.started = true
	r.workAndCheck() // starts the arena and pairs
	for r.step = 1; r.step <= steps; r.step++ {
		for range 1 + r.rnd.IntN(3) {
			r.operate()
		}
		r.workAndCheck()
	}
}

// operate does one random operation.
func (r *pairingRun) operate() {
	switch op := r.rnd.IntN(28); {
	case op < 4:
		p := r.pick()
		r.ar.leaveRoom(p.id)
		r.logf("%s leaves the arena's room", r.name(p.id))
	case op < 8:
		p := r.pick()
		r.ar.enterRoom(p.id)
		r.logf("%s enters the arena's room", r.name(p.id))
	case op < 11:
		r.openPage()
	case op < 13:
		p := r.pick()
		delete(r.page, p.id)
		r.logf("%s closes their game page", r.name(p.id))
	case op < 16:
		r.pause()
	case op < 19:
		r.resume()
	case op < 22:
		r.endGame(false)
	case op < 24:
		r.endGame(true)
	case op < 26:
		if r.advanced < time.Minute {
			d := time.Duration(100+r.rnd.IntN(1900)) * time.Millisecond
			r.clk.advance(d)
			r.advanced += d
			r.logf("the clock moves %s", d)
		}
	default:
		// Someone not in the arena can neither pause nor resume (409).
		action := []string{"pause", "resume"}[r.rnd.IntN(2)]
		r.ar.post(r.t, r.outsider, action).wantError(r.t, http.StatusConflict, "CONFLICT")
		r.logf("an outsider's %s is refused", action)
	}
}

// openPage opens a game's page for an entrant: mostly their current or
// last game's, sometimes any game of the arena (an older one of theirs,
// or someone else's as a spectator).
func (r *pairingRun) openPage() {
	p := r.pick()
	var g string
	switch {
	case len(r.games) == 0:
		return
	case r.rnd.IntN(3) > 0 && r.lastGame[p.id] != "":
		g = r.lastGame[p.id]
	default:
		g = r.games[r.rnd.IntN(len(r.games))]
	}
	r.page[p.id] = g
	r.logf("%s opens the page of game %s (their last: %s)", r.name(p.id), r.gameName(g), r.gameName(r.lastGame[p.id]))
}

func (r *pairingRun) gameName(g string) string {
	if i := slices.Index(r.games, g); i >= 0 {
		return fmt.Sprintf("g%d", i)
	}
	return "none"
}

// pause pauses an entrant through POST /pause, or after the start POST
// /withdraw (which pauses then). Both answer 200: the arena runs for 30
// minutes and the entrant is in it, so no 409 applies (pausing while
// paused answers the entry unchanged).
func (r *pairingRun) pause() {
	p := r.pick()
	action := "pause"
	if r.started && r.rnd.IntN(3) == 0 {
		action = "withdraw"
	}
	resp := r.ar.post(r.t, p, action)
	if resp.Code != http.StatusOK || resp.json(r.t)["status"] != "paused" {
		r.fail("%s of %s: %d %s, want 200 paused", action, r.name(p.id), resp.Code, resp.Body)
	}
	r.paused[p.id] = true
	g := r.current[p.id]
	r.logf("%s pauses (%s), playing game %s", r.name(p.id), action, r.gameName(g))
	if g == "" {
		return
	}
	// The pause leaves the game as it was: active, and still theirs.
	r.stats.pausedInGame++
	if s := r.gameStatus(g); s != "active" {
		r.fail("%s paused during game %s and the game is now %q, want active", r.name(p.id), r.gameName(g), s)
	}
	if cur := r.ar.get(r.t).line(r.t, p).CurrentGameID; cur == nil || *cur != g {
		r.fail("%s paused during game %s and their current game is now %v", r.name(p.id), r.gameName(g), cur)
	}
}

// resume resumes an entrant through POST /resume or by joining again
// (which opens their socket in the arena's room too, as the page does).
func (r *pairingRun) resume() {
	p := r.pick()
	var resp response
	action := "resume"
	if r.rnd.IntN(3) == 0 {
		action = "join"
		resp = r.ar.join(r.t, p)
	} else {
		resp = r.ar.post(r.t, p, action)
	}
	if resp.Code != http.StatusOK || resp.json(r.t)["status"] != "joined" {
		r.fail("%s of %s: %d %s, want 200 joined", action, r.name(p.id), resp.Code, resp.Body)
	}
	delete(r.paused, p.id)
	r.logf("%s resumes (%s)", r.name(p.id), action)
}

// endGame ends a random game in progress: one player resigns it, or
// (play) both choose and one wins the round, which ends a game of one
// round.
func (r *pairingRun) endGame(play bool) {
	var holders []player
	for _, p := range r.ps {
		if r.current[p.id] != "" {
			holders = append(holders, p)
		}
	}
	if len(holders) == 0 {
		return
	}
	p := holders[r.rnd.IntN(len(holders))]
	g := r.current[p.id]
	var opp player
	for _, q := range r.ps {
		if q.id != p.id && r.current[q.id] == g {
			opp = q
		}
	}
	if opp.id == "" {
		r.fail("the model has %s alone in game %s", r.name(p.id), r.gameName(g))
	}
	loser, winner := p, opp
	act := func(q player, body string) {
		if resp := r.a.act(r.t, q, g, body); resp.Code != http.StatusOK {
			r.fail("%s in game %s: %s answered %d %s", r.name(q.id), r.gameName(g), body, resp.Code, resp.Body)
		}
	}
	if play {
		if r.rnd.IntN(2) == 0 {
			loser, winner = winner, loser
		}
		moves := []func(){func() { act(loser, `{"type": "move", "move": "rock"}`) }, func() { act(winner, `{"type": "move", "move": "paper"}`) }}
		if r.rnd.IntN(2) == 0 {
			moves[0], moves[1] = moves[1], moves[0]
		}
		moves[0]()
		moves[1]()
	} else {
		act(loser, `{"type": "resign"}`)
	}
	r.wins[winner.id]++
	r.losses[loser.id]++
	r.current[winner.id], r.current[loser.id] = "", ""
	if r.paused[winner.id] || r.paused[loser.id] {
		r.stats.pausedGamesPlayedOut++
	}
	how := "resigns"
	if play {
		how = "loses the round"
	}
	r.logf("%s %s game %s to %s (paused: %v, %v)", r.name(loser.id), how, r.gameName(g), r.name(winner.id),
		r.paused[loser.id], r.paused[winner.id])
}

func (r *pairingRun) gameStatus(g string) string {
	r.t.Helper()
	resp := r.a.do(r.t, request{path: "/games/" + g})
	if resp.Code != http.StatusOK {
		r.fail("GET /games/%s: %d %s", g, resp.Code, resp.Body)
	}
	s, _ := resp.json(r.t)["status"].(string)
	return s
}

// sharePages writes the open game pages as another instance's sockets in
// those games' rooms (eventlog.Presence), on the arena's clock, as
// arena.share writes the arena's room.
func (r *pairingRun) sharePages() {
	ctx := context.Background()
	p, instance := eventlog.NewPresence(r.a.DB, r.clk.now), "test-pages-"+r.ar.id
	members := make([]domain.RoomMember, 0, len(r.page))
	for u, g := range r.page {
		members = append(members, domain.RoomMember{RoomID: g, UserID: u})
	}
	if err := p.Publish(ctx, instance, nil); err != nil {
		r.t.Fatal(err)
	}
	if err := p.SetRooms(ctx, instance, members, nil, true); err != nil {
		r.t.Fatal(err)
	}
}

// workAndCheck runs the worker once and checks what it did against the
// model as it stood when it ran.
func (r *pairingRun) workAndCheck() {
	t := r.t
	type state struct {
		free, paused, inRoom, onLastPage bool
		page, last                       string
	}
	before := map[string]state{}
	for _, p := range r.ps {
		s := state{free: r.current[p.id] == "", paused: r.paused[p.id], inRoom: r.ar.inRoom[p.id], page: r.page[p.id], last: r.lastGame[p.id]}
		s.onLastPage = s.page != "" && s.page == s.last
		before[p.id] = s
	}
	r.sharePages()
	r.ar.work(t)
	r.logf("the worker runs")
	d := r.ar.get(t)
	fresh := map[string][]string{}
	var leftWaiting []string
	for _, p := range r.ps {
		line, b, who := d.line(t, p), before[p.id], r.name(p.id)
		cur := ""
		if line.CurrentGameID != nil {
			cur = *line.CurrentGameID
		}
		if line.Paused != b.paused {
			r.fail("%s: paused is %v in the standings, want %v", who, line.Paused, b.paused)
		}
		if line.Paused && (line.PausedReason == nil || *line.PausedReason != tournament.PausedByPlayer) {
			r.fail("%s is paused by their own request, but pausedReason is %v", who, line.PausedReason)
		}
		if line.Wins != r.wins[p.id] || line.Losses != r.losses[p.id] {
			r.fail("%s has %d wins and %d losses, want %d and %d: a game ended that the test did not end (paused: %v, game %s)",
				who, line.Wins, line.Losses, r.wins[p.id], r.losses[p.id], b.paused, r.gameName(r.current[p.id]))
		}
		switch {
		case !b.free:
			if cur != r.current[p.id] {
				r.fail("%s's game %s, which the test neither played nor resigned, is no longer theirs (current game %q; paused: %v)",
					who, r.gameName(r.current[p.id]), cur, b.paused)
			}
		case cur != "":
			if b.paused {
				r.fail("%s was paired (game %s) while paused", who, cur)
			}
			if !b.inRoom && !b.onLastPage {
				r.fail("%s was paired (game %s) while disconnected: no socket in the arena's room nor on their last game's page "+
					"(open game page: %s, last game: %s)", who, cur, r.gameName(b.page), r.gameName(b.last))
			}
			fresh[cur] = append(fresh[cur], p.id)
		case !b.paused && (b.inRoom || b.onLastPage):
			leftWaiting = append(leftWaiting, who)
		}
	}
	// Every free, connected entrant not paused is paired, but at most one.
	if len(leftWaiting) > 1 {
		r.fail("%v were free, connected and not paused, but not paired", leftWaiting)
	}
	// The games in progress before the run are still in progress.
	for _, g := range r.current {
		if g != "" {
			if s := r.gameStatus(g); s != "active" {
				r.fail("game %s, which the test neither played nor resigned, is %q, want active", r.gameName(g), s)
			}
		}
	}
	for g, players := range fresh {
		if len(players) != 2 || slices.Contains(r.games, g) {
			r.fail("new game %s has the new players %v (known before: %v)", g, players, slices.Contains(r.games, g))
		}
		if s := r.gameStatus(g); s != "active" {
			r.fail("the new game %s is %q, want active", g, s)
		}
		r.games = append(r.games, g)
		for _, u := range players {
			r.current[u], r.lastGame[u] = g, g
			if !before[u].inRoom {
				r.stats.fromLastGamePage++
			}
		}
		r.logf("the worker pairs %s and %s in game %s", r.name(players[0]), r.name(players[1]), r.gameName(g))
		r.stats.pairings++
	}
	if len(fresh) == 0 {
		return
	}
	for _, p := range r.ps {
		b := before[p.id]
		if !b.free || r.current[p.id] != "" {
			continue
		}
		connected := b.inRoom || b.onLastPage
		switch {
		case b.paused && connected:
			r.stats.skippedPaused++
		case !b.paused && !connected:
			r.stats.skippedDisconnected++
			if b.page != "" {
				r.stats.skippedStalePage++
			}
		}
	}
}
