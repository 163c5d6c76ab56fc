package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/money"
	"wager/domain/tournament"
)

// arena is a tournament under test with the clock its app reads.
type arena struct {
	a     *testApp
	clock *testClock
	id    string
	// inRoom are the users who stand for a socket in the arena's room:
	// the worker pairs only those (see share).
	inRoom map[string]bool
}

// tournamentApp is an app without background workers (the tests run the
// tournament worker themselves) on a clock they move.
func tournamentApp(t *testing.T) (*testApp, *testClock) {
	t.Helper()
	clk := newTestClock()
	return newTestAppAt(t, noWorkers, clk.now), clk
}

// newArena schedules a tournament created by p with body's fields over
// defaults (rps of 1 round, starting in 2 minutes, 10 minutes long).
func newArena(t *testing.T, a *testApp, clk *testClock, p player, fields map[string]any) *arena {
	t.Helper()
	body := map[string]any{"name": "Test arena", "gameType": "rps", "settings": map[string]any{"rounds": 1},
		"entryFeeMinor": 0, "startsAt": clk.now().Add(2 * time.Minute).Format(time.RFC3339), "durationMinutes": 10}
	for k, v := range fields {
		body[k] = v
	}
	r := a.do(t, request{method: http.MethodPost, path: "/tournaments", header: p.auth, body: jsonBody(body)})
	if r.Code != http.StatusCreated {
		t.Fatalf("create a tournament: %d %s", r.Code, r.Body)
	}
	return &arena{a: a, clock: clk, id: r.json(t)["id"].(string), inRoom: map[string]bool{}}
}

// enterRoom and leaveRoom stand for a user's socket in the arena's room
// opening and closing (their entry opens it: see join).
func (ar *arena) enterRoom(ids ...string) {
	for _, id := range ids {
		ar.inRoom[id] = true
	}
}

func (ar *arena) leaveRoom(ids ...string) {
	for _, id := range ids {
		delete(ar.inRoom, id)
	}
}

// share writes who is in the arena's room as an instance of the arena's
// own shares its sockets (eventlog.Presence), on the arena's clock: these
// tests run the worker without a hub or sockets (TestArenaPairsOnlyPlayersWithASocket
// pairs through real ones).
func (ar *arena) share(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	p, instance := eventlog.NewPresence(ar.a.DB, ar.clock.now), "test-"+ar.id
	members := make([]domain.RoomMember, 0, len(ar.inRoom))
	for id := range ar.inRoom {
		members = append(members, domain.RoomMember{RoomID: ar.id, UserID: id})
	}
	if err := p.Publish(ctx, instance, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.SetRooms(ctx, instance, members, nil, true); err != nil {
		t.Fatal(err)
	}
}

// join enters p through the API; an entry that is answered 200 opens
// p's socket in the arena's room too, as the arena page does.
func (ar *arena) join(t *testing.T, p player) response {
	t.Helper()
	r := ar.a.do(t, request{method: http.MethodPost, path: "/tournaments/" + ar.id + "/join", header: p.auth})
	if r.Code == http.StatusOK {
		ar.enterRoom(p.id)
	}
	return r
}

func (ar *arena) mustJoin(t *testing.T, ps ...player) {
	t.Helper()
	for _, p := range ps {
		if r := ar.join(t, p); r.Code != http.StatusOK {
			t.Fatalf("join: %d %s", r.Code, r.Body)
		}
	}
}

func (ar *arena) withdraw(t *testing.T, p player) response {
	t.Helper()
	return ar.a.do(t, request{method: http.MethodPost, path: "/tournaments/" + ar.id + "/withdraw", header: p.auth})
}

// work runs the tournament's worker once, as an instance would, with
// the arena's room as it stands (share).
func (ar *arena) work(t *testing.T) {
	t.Helper()
	ar.share(t)
	if err := ar.a.Tournaments.WorkOn(context.Background(), ar.id); err != nil {
		t.Fatal(err)
	}
}

// start moves the clock to the start and runs the worker: it starts and
// pairs.
func (ar *arena) start(t *testing.T) {
	t.Helper()
	ar.clock.advance(2 * time.Minute)
	ar.work(t)
}

type arenaDetail struct {
	tournament.Detail
}

func (ar *arena) get(t *testing.T) arenaDetail {
	t.Helper()
	r := ar.a.do(t, request{path: "/tournaments/" + ar.id})
	if r.Code != http.StatusOK {
		t.Fatalf("GET tournament: %d %s", r.Code, r.Body)
	}
	var d arenaDetail
	if err := json.Unmarshal(r.Body.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// line returns a player's line of the standings.
func (d arenaDetail) line(t *testing.T, p player) tournament.Standing {
	t.Helper()
	for _, s := range d.Standings {
		if s.UserID == p.id {
			return s
		}
	}
	t.Fatalf("%s is not in the standings %+v", p.id, d.Standings)
	return tournament.Standing{}
}

// games returns the tournament's games in progress: each game's players.
func (d arenaDetail) games() map[string][]string {
	out := map[string][]string{}
	for _, s := range d.Standings {
		if s.CurrentGameID != nil {
			out[*s.CurrentGameID] = append(out[*s.CurrentGameID], s.UserID)
		}
	}
	return out
}

// win has winner win their current game of the tournament (the other
// player resigns).
func (ar *arena) win(t *testing.T, winner player, players map[string]player) {
	t.Helper()
	d := ar.get(t)
	g := d.line(t, winner).CurrentGameID
	if g == nil {
		t.Fatalf("%s is not playing", winner.id)
	}
	for _, uid := range d.games()[*g] {
		if uid != winner.id {
			if r := ar.a.act(t, players[uid], *g, `{"type": "resign"}`); r.Code != http.StatusOK {
				t.Fatalf("resign: %d %s", r.Code, r.Body)
			}
		}
	}
}

func byID(ps ...player) map[string]player {
	out := map[string]player{}
	for _, p := range ps {
		out[p.id] = p
	}
	return out
}

// Every field of a new tournament is checked: each bad value is a 400
// VALIDATION_ERROR naming its field, and nothing is created.
func TestTournamentValidationNamesEveryField(t *testing.T) {
	a, clk := tournamentApp(t)
	p := a.newPlayer(t)
	now := clk.now()
	valid := map[string]any{"name": "Friday arena", "gameType": "rps", "entryFeeMinor": 0,
		"startsAt": now.Add(time.Hour).Format(time.RFC3339), "durationMinutes": 30}
	for _, tc := range []struct {
		field string
		value any
	}{
		{"name", ""}, {"name", "   "}, {"name", strings.Repeat("n", 61)}, {"name", "bad\u202ename"}, {"name", 7},
		{"gameType", "chess"}, {"gameType", ""},
		{"settings.rounds", map[string]any{"rounds": 2}}, {"settings.roundSeconds", map[string]any{"roundSeconds": 1}},
		{"entryFeeMinor", 1}, {"entryFeeMinor", 99_999}, {"entryFeeMinor", 100_000_001}, {"entryFeeMinor", -5}, {"entryFeeMinor", "ten"},
		{"startsAt", ""}, {"startsAt", "tomorrow"}, {"startsAt", now.Add(-time.Hour).Format(time.RFC3339)},
		{"startsAt", now.Add(8 * 24 * time.Hour).Format(time.RFC3339)},
		{"durationMinutes", 0}, {"durationMinutes", 181}, {"durationMinutes", 1.5},
		{"maxPlayers", 1}, {"maxPlayers", 257},
		{"prizeSplitBps", []int{}}, {"prizeSplitBps", []int{5000, 4000}}, {"prizeSplitBps", []int{11000, -1000}},
		{"prizeSplitBps", []int{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 500, 500}},
	} {
		body := map[string]any{}
		for k, v := range valid {
			body[k] = v
		}
		key := tc.field
		if strings.HasPrefix(key, "settings.") {
			key = "settings"
		}
		body[key] = tc.value
		r := a.do(t, request{method: http.MethodPost, path: "/tournaments", header: p.auth, body: jsonBody(body)})
		m := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		fields, _ := m["fields"].(map[string]any)
		if _, ok := fields[tc.field]; !ok {
			t.Errorf("%s = %v: fields %v, want %s named", key, tc.value, fields, tc.field)
		}
	}
	var n int
	if err := a.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM tournaments WHERE created_by = ?", p.id).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tournaments created by refused requests (%v)", n, err)
	}
	// Signed out: 401. Valid: 201 with the tournament.
	a.do(t, request{method: http.MethodPost, path: "/tournaments", body: jsonBody(valid)}).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	r := a.do(t, request{method: http.MethodPost, path: "/tournaments", header: p.auth, body: jsonBody(valid)})
	if r.Code != http.StatusCreated {
		t.Fatalf("a valid tournament: %d %s", r.Code, r.Body)
	}
	var got tournament.Tournament
	json.Unmarshal(r.Body.Bytes(), &got)
	if got.Status != "scheduled" || got.MaxPlayers != 64 || !slices.Equal(got.PrizeSplitBps, []int{5000, 3000, 2000}) ||
		got.CreatedBy.UserID != p.id || got.CreatedBy.Username == "" || !got.EndsAt.Equal(got.StartsAt.Add(30*time.Minute)) ||
		string(got.Settings) == "" || got.PlayerCount != 0 {
		t.Errorf("created: %s", r.Body)
	}
	// Listed (scheduled), and filtered by status; a bad status is 400.
	list := a.do(t, request{path: "/tournaments?limit=200"})
	if !strings.Contains(list.Body.String(), got.ID) {
		t.Errorf("the list lacks the new tournament: %s", list.Body)
	}
	if r := a.do(t, request{path: "/tournaments?status=finished&limit=200"}); strings.Contains(r.Body.String(), got.ID) {
		t.Errorf("a scheduled tournament among the finished: %s", r.Body)
	}
	a.do(t, request{path: "/tournaments?status=over"}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	a.do(t, request{path: "/tournaments/00000000-0000-0000-0000-000000000000"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
	a.do(t, request{path: "/tournaments/nope"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
}

// A paid entry locks the fee from the available balance; a player whose
// balance does not cover it is refused (409 INSUFFICIENT_FUNDS) and
// nothing moves; a full tournament refuses the next player (409
// CONFLICT).
func TestTournamentEntriesLockFeesAndRefuseWhenShortOrFull(t *testing.T) {
	a, clk := tournamentApp(t)
	rich, other, poor, late := a.depositor(t, 3_000_000), a.depositor(t, 1_000_000), a.depositor(t, 999_999), a.depositor(t, 1_000_000)
	ar := newArena(t, a, clk, rich, map[string]any{"entryFeeMinor": 1_000_000, "maxPlayers": 2})
	r := ar.join(t, poor)
	m := r.wantError(t, http.StatusConflict, "INSUFFICIENT_FUNDS")
	if m["neededMinor"] != float64(1_000_000) || m["availableMinor"] != float64(999_999) {
		t.Errorf("the refusal names the amounts: %s", r.Body)
	}
	if b := a.balances(t, poor.auth); b.available != 999_999 || b.locked != 0 {
		t.Errorf("the refused player's balance moved: %+v", b)
	}
	ar.mustJoin(t, rich)
	if b := a.balances(t, rich.auth); b.available != 2_000_000 || b.locked != 1_000_000 {
		t.Errorf("after the entry: %+v, want 1 USDC locked", b)
	}
	// Joining again pays nothing more.
	if r := ar.join(t, rich); r.Code != http.StatusOK || r.json(t)["lockedMinor"] != float64(0) {
		t.Errorf("joining again: %d %s", r.Code, r.Body)
	}
	if b := a.balances(t, rich.auth); b.locked != 1_000_000 {
		t.Errorf("joining again locked more: %+v", b)
	}
	ar.mustJoin(t, other)
	ar.join(t, late).wantError(t, http.StatusConflict, "CONFLICT")
	if b := a.balances(t, late.auth); b.available != 1_000_000 {
		t.Errorf("a refused entry moved money: %+v", b)
	}
	d := ar.get(t)
	if d.PlayerCount != 2 || d.PrizePoolMinor != 2_000_000 || len(d.Standings) != 2 {
		t.Errorf("the tournament: %+v", d.Tournament)
	}
	a.do(t, request{method: http.MethodPost, path: "/tournaments/" + ar.id + "/join"}).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	a.do(t, request{method: http.MethodPost, path: "/tournaments/00000000-0000-0000-0000-000000000000/join", header: rich.auth}).
		wantError(t, http.StatusNotFound, "NOT_FOUND")
	// The wallet history says it.
	if !slices.ContainsFunc(a.historyItems(t, rich), func(it map[string]any) bool {
		return it["kind"] == "tournament entry" && it["amountMinor"] == float64(-1_000_000)
	}) {
		t.Errorf("no tournament entry line in the history: %v", a.historyItems(t, rich))
	}
}

// Withdrawing before the start refunds the entry; after it, the player is
// paused: not paired, still in the standings with the entry in the pool,
// and joining again pays nothing.
func TestTournamentWithdrawBeforeAndAfterTheStart(t *testing.T) {
	a, clk := tournamentApp(t)
	p1, p2, p3 := a.depositor(t, 1_000_000), a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	ar := newArena(t, a, clk, p1, map[string]any{"entryFeeMinor": 500_000})
	ar.mustJoin(t, p1, p2, p3)
	r := ar.withdraw(t, p3)
	if r.Code != http.StatusOK || r.json(t)["status"] != "withdrawn" || r.json(t)["refundedMinor"] != float64(500_000) {
		t.Fatalf("withdraw before the start: %d %s", r.Code, r.Body)
	}
	if b := a.balances(t, p3.auth); b.available != 1_000_000 || b.locked != 0 {
		t.Errorf("refunded: %+v, want all of it back", b)
	}
	ar.withdraw(t, p3).wantError(t, http.StatusConflict, "CONFLICT") // not in it any more
	// Joining again before the start pays again (the first was refunded).
	ar.mustJoin(t, p3)
	if b := a.balances(t, p3.auth); b.available != 500_000 || b.locked != 500_000 {
		t.Errorf("joined again: %+v", b)
	}
	if d := ar.get(t); d.PlayerCount != 3 || d.PrizePoolMinor != 1_500_000 {
		t.Errorf("after leaving and coming back: %+v", d.Tournament)
	}

	// The start time passes; until the worker starts it, it is still
	// scheduled and a withdrawal is refunded.
	ar.clock.advance(2 * time.Minute)
	if r := ar.withdraw(t, p3); r.Code != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Code, r.Body)
	}
	// The worker has not started it yet: still scheduled, so refunded.
	if b := a.balances(t, p3.auth); b.locked != 0 {
		t.Errorf("withdrawn while still scheduled: %+v", b)
	}
	ar.mustJoin(t, p3)
	ar.work(t) // starts: p1, p2, p3 wait; one game and one player left
	if r := ar.withdraw(t, p1); r.Code != http.StatusOK || r.json(t)["status"] != "paused" || r.json(t)["refundedMinor"] != float64(0) {
		t.Fatalf("withdraw after the start: %d %s", r.Code, r.Body)
	}
	if b := a.balances(t, p1.auth); b.locked != 500_000 {
		t.Errorf("paused: %+v, want the entry still locked", b)
	}
	d := ar.get(t)
	if d.Status != "running" || d.PlayerCount != 3 || d.PrizePoolMinor != 1_500_000 || !d.line(t, p1).Paused {
		t.Errorf("after the pause: %+v %+v", d.Tournament, d.Standings)
	}
	// p1 was paired at the start (before the pause): the game still
	// counts. Once it ends p1 is not paired again; the others are.
	players := byID(p1, p2, p3)
	if g := d.line(t, p1).CurrentGameID; g != nil {
		ar.win(t, p1, players)
	} else {
		ar.win(t, p2, players)
	}
	ar.work(t)
	d = ar.get(t)
	if d.line(t, p1).CurrentGameID != nil {
		t.Errorf("a paused player was paired: %+v", d.Standings)
	}
	if d.line(t, p2).CurrentGameID == nil || d.line(t, p3).CurrentGameID == nil {
		t.Errorf("the two others are not playing: %+v", d.Standings)
	}
	// Back in, without paying twice.
	r = ar.join(t, p1)
	if r.Code != http.StatusOK || r.json(t)["status"] != "joined" || r.json(t)["lockedMinor"] != float64(0) {
		t.Fatalf("join after a pause: %d %s", r.Code, r.Body)
	}
	if b := a.balances(t, p1.auth); b.available != 500_000 || b.locked != 500_000 {
		t.Errorf("back after a pause: %+v, want one entry locked", b)
	}
}

// Four players make two games; once they end, each is paired with
// someone new. Five make two games and one waits; the one who waited is
// paired as soon as a game ends.
func TestTournamentPairsFourAndFivePlayers(t *testing.T) {
	a, clk := tournamentApp(t)
	four := []player{a.newPlayer(t), a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)}
	ar := newArena(t, a, clk, four[0], nil)
	ar.mustJoin(t, four...)
	ar.start(t)
	d := ar.get(t)
	games := d.games()
	if d.Status != "running" || len(games) != 2 {
		t.Fatalf("four players: %d games (%+v)", len(games), d.Standings)
	}
	first := map[string]string{}
	for _, ps := range games {
		first[ps[0]], first[ps[1]] = ps[1], ps[0]
	}
	// The tournament's games are ordinary free games with tournamentId.
	for g := range games {
		m := a.do(t, request{path: "/games/" + g}).json(t)
		if m["tournamentId"] != ar.id || m["stakeMinor"] != float64(0) || m["status"] != "active" {
			t.Errorf("game %s: %v", g, m)
		}
		a.do(t, request{method: http.MethodPost, path: "/games/" + g + "/bets/prepare", header: a.newPlayer(t).auth,
			body: `{"onUserId": "` + games[g][0] + `", "amountMinor": 10000}`}).wantError(t, http.StatusConflict, "BETTING_CLOSED")
	}
	players := byID(four...)
	for _, ps := range games {
		ar.win(t, players[ps[0]], players)
	}
	ar.clock.advance(time.Second)
	ar.work(t)
	d = ar.get(t)
	games = d.games()
	if len(games) != 2 {
		t.Fatalf("after the first round: %d games (%+v)", len(games), d.Standings)
	}
	for _, ps := range games {
		if first[ps[0]] == ps[1] {
			t.Errorf("%s and %s play each other twice in a row with two others waiting", ps[0], ps[1])
		}
	}
	// Winners meet winners: closest scores first.
	for _, ps := range games {
		if d.line(t, players[ps[0]]).Score != d.line(t, players[ps[1]]).Score {
			t.Errorf("%v paired with different scores: %+v", ps, d.Standings)
		}
	}

	five := []player{a.newPlayer(t), a.newPlayer(t), a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)}
	ar5 := newArena(t, a, clk, five[0], nil)
	ar5.mustJoin(t, five...)
	ar5.start(t)
	d = ar5.get(t)
	if g := d.games(); len(g) != 2 {
		t.Fatalf("five players: %d games, want 2", len(g))
	}
	var waiting player
	players = byID(five...)
	for _, s := range d.Standings {
		if s.CurrentGameID == nil {
			waiting = players[s.UserID]
		}
	}
	if waiting.id == "" {
		t.Fatal("nobody waits among five")
	}
	ar5.work(t) // nobody new to pair with
	if d := ar5.get(t); d.line(t, waiting).CurrentGameID != nil {
		t.Fatal("the fifth player was paired alone")
	}
	for _, ps := range d.games() {
		ar5.win(t, players[ps[0]], players)
		break
	}
	ar5.work(t)
	if d := ar5.get(t); d.line(t, waiting).CurrentGameID == nil || len(d.games()) != 2 {
		t.Errorf("once a game ended, the fifth is still waiting: %+v", d.Standings)
	}
}

// Two wins in a row put a player on fire; each further win counts 4 until
// a game that is not a win.
func TestTournamentStreakBonus(t *testing.T) {
	a, clk := tournamentApp(t)
	hero, b, c := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	players := byID(hero, b, c)
	ar := newArena(t, a, clk, hero, nil)
	ar.mustJoin(t, hero, b, c)
	ar.start(t)
	play := func() { // hero wins a game; the game without hero (if any) goes to the lower user id
		t.Helper()
		for {
			d := ar.get(t)
			if d.line(t, hero).CurrentGameID != nil {
				ar.win(t, hero, players)
				ar.work(t)
				return
			}
			for _, ps := range d.games() {
				ar.win(t, players[min(ps[0], ps[1])], players)
			}
			ar.work(t)
		}
	}
	want := []struct {
		score  int
		onFire bool
	}{{2, false}, {4, true}, {8, true}, {12, true}}
	for i, w := range want {
		play()
		if got := ar.get(t).line(t, hero); got.Score != w.score || got.OnFire != w.onFire || got.Wins != i+1 {
			t.Fatalf("after win %d: %+v, want score %d, on fire %v", i+1, got, w.score, w.onFire)
		}
	}
	// A loss ends the fire; the next win counts 2.
	for {
		d := ar.get(t)
		if g := d.line(t, hero).CurrentGameID; g != nil {
			if r := a.act(t, hero, *g, `{"type": "resign"}`); r.Code != http.StatusOK {
				t.Fatalf("resign: %d %s", r.Code, r.Body)
			}
			ar.work(t)
			break
		}
		for _, ps := range d.games() {
			ar.win(t, players[ps[0]], players)
		}
		ar.work(t)
	}
	if got := ar.get(t).line(t, hero); got.Score != 12 || got.OnFire || got.Losses != 1 {
		t.Fatalf("after a loss: %+v", got)
	}
	play()
	if got := ar.get(t).line(t, hero); got.Score != 14 || got.OnFire {
		t.Fatalf("after a loss and a win: %+v, want 14 and not on fire", got)
	}
}

// A tournament with one entrant at its start is cancelled and the entry
// refunded.
func TestTournamentWithOneEntrantIsCancelledAndRefunded(t *testing.T) {
	a, clk := tournamentApp(t)
	p := a.depositor(t, 1_000_000)
	ar := newArena(t, a, clk, p, map[string]any{"entryFeeMinor": 700_000})
	ar.mustJoin(t, p)
	ar.clock.advance(time.Minute)
	ar.work(t) // the reminder
	ns, _ := a.notifications(t, p, "")
	if !slices.ContainsFunc(ns, func(n notification) bool { return n.Type == "tournament_starting" && n.Data["tournamentId"] == ar.id }) {
		t.Errorf("no tournament_starting notification a minute before: %+v", ns)
	}
	ar.clock.advance(time.Minute)
	ar.work(t)
	d := ar.get(t)
	if d.Status != "cancelled" || d.FinishedAt == nil || d.PrizePoolMinor != 0 {
		t.Errorf("one entrant at the start: %+v", d.Tournament)
	}
	if b := a.balances(t, p.auth); b.available != 1_000_000 || b.locked != 0 {
		t.Errorf("the entrant's balance: %+v, want the entry back", b)
	}
	ar.join(t, a.newPlayer(t)).wantError(t, http.StatusConflict, "CONFLICT")
	ar.withdraw(t, p).wantError(t, http.StatusConflict, "CONFLICT")
	ar.work(t)
	if b := a.balances(t, p.auth); b.available != 1_000_000 {
		t.Errorf("refunded twice: %+v", b)
	}
}

// The prizes, exactly: four paid entries, games played to a final
// standing with a tie for second place, the end after the last game; the
// pool less the 1% fee is paid by the split, the tie shares its places,
// the floors go to the treasury, once.
func TestTournamentPrizesAreExact(t *testing.T) {
	a, clk := tournamentApp(t)
	fee := int64(1_000_001)
	ps := []player{a.depositor(t, fee), a.depositor(t, fee), a.depositor(t, fee), a.depositor(t, fee)}
	players := byID(ps...)
	ar := newArena(t, a, clk, ps[0], map[string]any{"entryFeeMinor": fee, "durationMinutes": 5})
	ar.mustJoin(t, ps...)
	treasury := a.ledger(t, money.Treasury)
	ar.start(t)
	// Round one: two winners (2 each), two losers (0).
	for _, g := range ar.get(t).games() {
		ar.win(t, players[min(g[0], g[1])], players)
	}
	ar.work(t) // round two: winner v winner, loser v loser
	d := ar.get(t)
	var top player
	for _, g := range d.games() {
		ar.win(t, players[min(g[0], g[1])], players)
		if d.line(t, players[g[0]]).Score == 2 {
			top = players[min(g[0], g[1])]
		}
	}
	// Final: top 4 (on two wins), two on 2, one on 0.
	ar.clock.advance(5 * time.Minute)
	ar.work(t)
	d = ar.get(t)
	if d.Status != "finished" {
		t.Fatalf("after the end: %+v", d.Tournament)
	}
	pool := 4 * fee                                // 4000004
	net := pool - pool/100                         // 3960004
	first := net * 5000 / 10_000                   // 1980002
	tie := (net*3000/10_000 + net*2000/10_000) / 2 // places 2 and 3: (1188001 + 792000) / 2 = 990000
	want := map[string]int64{top.id: first}
	for _, s := range d.Standings {
		if s.Score == 2 {
			want[s.UserID] = tie
		}
	}
	if len(want) != 3 || d.line(t, top).Score != 4 {
		t.Fatalf("the standings are not the ones planned: %+v", d.Standings)
	}
	got := map[string]int64{}
	for _, pr := range d.Prizes {
		got[pr.UserID] += pr.AmountMinor
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("prizes %v, want %v", got, want)
	}
	for _, p := range ps {
		b := a.balances(t, p.auth)
		if b.available != want[p.id] || b.locked != 0 {
			t.Errorf("player %s: %+v, want %d available", p.id, b, want[p.id])
		}
	}
	floors := net - first - 2*tie
	if gotT := a.ledger(t, money.Treasury) - treasury; gotT != pool/100+floors {
		t.Errorf("treasury +%d, want the fee %d and the floors %d", gotT, pool/100, floors)
	}
	for _, p := range ps {
		ns, _ := a.notifications(t, p, "")
		n := 0
		for _, x := range ns {
			if x.Type == "tournament_prize" {
				n++
				if x.Data["amountMinor"] != float64(want[p.id]) || x.Data["tournamentId"] != ar.id {
					t.Errorf("the prize notification of %s: %v", p.id, x.Data)
				}
			}
		}
		if n != map[bool]int{true: 1, false: 0}[want[p.id] > 0] {
			t.Errorf("%s got %d tournament_prize notifications", p.id, n)
		}
	}
	var won int
	if err := a.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM activity WHERE type = 'tournament_won' AND actor_id = ? AND data->>'tournamentId' = ?",
		top.id, ar.id).Scan(&won); err != nil || won != 1 {
		t.Errorf("tournament_won entries of the winner: %d (%v)", won, err)
	}
	// The end happens once: the worker again changes nothing.
	ar.work(t)
	if b := a.balances(t, top.auth); b.available != first {
		t.Errorf("paid again: %+v", b)
	}
	ar.join(t, a.newPlayer(t)).wantError(t, http.StatusConflict, "CONFLICT")
}

// No game starts after the end; a game still running then counts, and the
// tournament finishes when it ends.
func TestTournamentEndWaitsForTheLastGame(t *testing.T) {
	a, clk := tournamentApp(t)
	ps := []player{a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)}
	players := byID(ps...)
	ar := newArena(t, a, clk, ps[0], map[string]any{"durationMinutes": 1})
	ar.mustJoin(t, ps...)
	ar.start(t)
	clk.advance(time.Minute)
	ar.work(t)
	d := ar.get(t)
	if d.Status != "running" || len(d.games()) != 1 {
		t.Fatalf("a game runs past the end: %+v", d.Tournament)
	}
	var winner player
	for _, g := range d.games() {
		winner = players[g[0]]
		ar.win(t, winner, players)
	}
	ar.join(t, a.newPlayer(t)).wantError(t, http.StatusConflict, "CONFLICT") // past its end
	ar.work(t)
	d = ar.get(t)
	if d.Status != "finished" || d.line(t, winner).Score != 2 || len(d.games()) != 0 {
		t.Errorf("after the last game: %+v %+v", d.Tournament, d.Standings)
	}
}

// The tournament's room on the live socket: joined-tournament with the
// tournament and its seq, then standings (at most once a second), pairings
// and the end, each with the tournament's seq, in order; a join with the
// last seq seen resumes with exactly the events missed.
func TestTournamentLiveRoom(t *testing.T) {
	a, clk := tournamentApp(t)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	p1, p2, watcher := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	ar := newArena(t, a, clk, p1, map[string]any{"durationMinutes": 1})
	ws := dialWS(t, srv, tokenOf(watcher))
	ws.send(map[string]any{"type": "join-tournament", "tournamentId": ar.id})
	joined := ws.next("joined-tournament")
	if joined["tournamentId"] != ar.id || joined["seq"] != float64(0) || joined["tournament"].(map[string]any)["id"] != ar.id {
		t.Fatalf("joined: %v", joined)
	}
	ar.mustJoin(t, p1, p2)
	ar.work(t) // the entrants: standings
	ev := ws.next("event")
	if ev["event"] != "tournament:standings" || ev["seq"] != float64(1) || ev["tournamentId"] != ar.id {
		t.Fatalf("first event: %v", ev)
	}
	ar.start(t)
	var names []string
	seq := 1.0
	for len(names) < 3 {
		ev := ws.next("event")
		if ev["seq"] != seq+1 {
			t.Fatalf("event %v after seq %v", ev, seq)
		}
		seq = ev["seq"].(float64)
		names = append(names, ev["event"].(string))
	}
	if !slices.Equal(names, []string{"tournament:started", "tournament:pairing", "tournament:standings"}) {
		t.Errorf("events at the start: %v", names)
	}
	// Nothing changed and less than a second passed: no standings.
	ar.work(t)
	// A result, the end; a second socket resumes from two events back and
	// gets exactly what followed.
	ar.win(t, p1, byID(p1, p2))
	clk.advance(time.Minute)
	ar.work(t)
	ev = ws.next("event")
	if ev["event"] != "tournament:finished" || ev["seq"] != seq+1 {
		t.Fatalf("the end: %v (after seq %v)", ev, seq)
	}
	if prizes := ev["data"].(map[string]any)["prizes"]; prizes == nil {
		t.Errorf("finished without prizes: %v", ev)
	}
	late := dialWS(t, srv, tokenOf(p2))
	late.send(map[string]any{"type": "join-tournament", "tournamentId": ar.id, "lastSeq": seq - 2})
	if r := late.next("resumed-tournament"); r["seq"] != seq-2 {
		t.Fatalf("resumed: %v", r)
	}
	for want := seq - 1; want <= seq+1; want++ {
		if ev := late.next("event"); ev["seq"] != want {
			t.Fatalf("resumed event %v, want seq %v", ev, want)
		}
	}
	late.send(map[string]any{"type": "join-tournament", "tournamentId": "00000000-0000-0000-0000-000000000000"})
	if e := late.next("error"); e["code"] != "NOT_FOUND" || e["tournamentId"] != "00000000-0000-0000-0000-000000000000" {
		t.Errorf("unknown tournament: %v", e)
	}
	late.send(map[string]any{"type": "leave-tournament", "tournamentId": ar.id})
	late.next("left-tournament")
}

// Entries count as stakes for player protection: a fee above the
// player's maximum stake, one after the loss limit is reached, and any
// during a time-out or self-exclusion are refused with nothing locked;
// free tournaments stay open to them.
func TestTournamentEntriesMeetPlayerProtection(t *testing.T) {
	a, clk := tournamentApp(t)
	capped, excluded, loser := a.depositor(t, 5_000_000), a.depositor(t, 5_000_000), a.depositor(t, 5_000_000)
	paid := newArena(t, a, clk, capped, map[string]any{"entryFeeMinor": 2_000_000})
	free := newArena(t, a, clk, capped, nil)
	put := func(p player, body string) {
		t.Helper()
		if r := a.do(t, request{method: http.MethodPut, path: "/users/me/limits", header: p.auth, body: body}); r.Code != http.StatusOK {
			t.Fatalf("set limits: %d %s", r.Code, r.Body)
		}
	}
	put(capped, `{"stakeMaxMinor": 1000000}`)
	m := paid.join(t, capped).wantError(t, http.StatusConflict, "LIMIT_EXCEEDED")
	if m["limit"] != "stakeMaxMinor" {
		t.Errorf("refusal: %v", m)
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/users/me/exclusion", header: excluded.auth,
		body: `{"kind": "timeout", "hours": 24}`}); r.Code != http.StatusCreated {
		t.Fatalf("exclusion: %d %s", r.Code, r.Body)
	}
	paid.join(t, excluded).wantError(t, http.StatusForbidden, "SELF_EXCLUDED")
	// A loss limit of 3 USDC a day: one entry of 2 fits; a second of 2
	// could take the loss to 4 and is refused (the whole fee counts, as
	// entries count as losses); one of 1 still fits.
	put(loser, `{"lossMinor": {"day": 3000000}}`)
	paid.mustJoin(t, loser)
	other := newArena(t, a, clk, capped, map[string]any{"entryFeeMinor": 2_000_000})
	if m := other.join(t, loser).wantError(t, http.StatusConflict, "LIMIT_EXCEEDED"); m["limit"] != "lossMinor.day" {
		t.Errorf("loss refusal: %v", m)
	}
	third := newArena(t, a, clk, capped, map[string]any{"entryFeeMinor": 1_000_000})
	third.mustJoin(t, loser)
	if got := a.limits(t, loser).Used.LossMinor.Day; got != 3_000_000 {
		t.Errorf("loss used %d, want the two entries that fit, 3000000", got)
	}
	for _, p := range []player{capped, excluded} {
		if b := a.balances(t, p.auth); b.locked != 0 || b.available != 5_000_000 {
			t.Errorf("refused entries moved money: %+v", b)
		}
		free.mustJoin(t, p)
	}
	// A refund gives the loss back.
	third.withdraw(t, loser)
	if got := a.limits(t, loser).Used.LossMinor.Day; got != 2_000_000 {
		t.Errorf("loss after a refund %d, want 2000000", got)
	}
}

// While an arena runs, TV shows the game of its best placed player who is
// playing (the arena with the most players first).
func TestTournamentTopGameIsOnTV(t *testing.T) {
	a, clk := tournamentApp(t)
	creator := a.newPlayer(t)
	ar := newArena(t, a, clk, creator, map[string]any{"maxPlayers": 100})
	ids := newUsers(t, a, 60)
	for _, id := range ids {
		if _, err := a.Tournaments.Join(context.Background(), id, ar.id); err != nil {
			t.Fatal(err)
		}
	}
	ar.enterRoom(ids...)
	ar.start(t)
	games := ar.get(t).games()
	r := a.do(t, request{path: "/tv", header: map[string]string{"Accept": "text/html"}})
	if r.Code != http.StatusOK {
		t.Fatalf("/tv: %d", r.Code)
	}
	shown := ""
	for g := range games {
		if strings.Contains(r.Body.String(), `data-game-id="`+g+`"`) {
			shown = g
		}
	}
	if shown == "" {
		t.Errorf("TV shows none of the arena's %d games", len(games))
	}
}

// After a join, the arena page says once that the player is in.
func TestTheArenaPageSaysOnceThatYouAreIn(t *testing.T) {
	a, clk := tournamentApp(t)
	ann := a.newPlayer(t)
	ar := newArena(t, a, clk, ann, map[string]any{})
	if r := a.do(t, request{method: http.MethodPost, path: "/tournaments/" + ar.id + "/join", header: ann.auth}); r.Code != http.StatusOK {
		t.Fatalf("join: %d %s", r.Code, r.Body)
	}
	cookie := a.sessionCookie(t, ann.wallet)
	r := a.do(t, request{path: "/arenas/" + ar.id + "?done=in", header: map[string]string{"Cookie": cookie, "Accept": "text/html"}})
	text := visibleText(r.Body.String())
	if n := strings.Count(text, "You are in"); n != 1 || !strings.Contains(text, "You are paired as soon as the arena runs and you are free, while this page or your game's page is open.") {
		t.Errorf("the page says %d times that you are in: %s", n, text)
	}

	// Once Ann plays a game of the running arena, Pause says that it does
	// not pause that game.
	bob := a.newPlayer(t)
	if r := a.do(t, request{method: http.MethodPost, path: "/tournaments/" + ar.id + "/join", header: bob.auth}); r.Code != http.StatusOK {
		t.Fatalf("join: %d %s", r.Code, r.Body)
	}
	ar.enterRoom(ann.id, bob.id)
	ar.start(t)
	if len(ar.get(t).games()) != 1 {
		t.Fatal("the arena did not pair Ann and Bob at its start")
	}
	r = a.do(t, request{path: "/arenas/" + ar.id, header: map[string]string{"Cookie": cookie, "Accept": "text/html"}})
	if text := visibleText(r.Body.String()); !strings.Contains(text,
		"Pause Pausing stops new pairings, not your game in progress: play it out or resign it, or it is lost on time.") {
		t.Errorf("Pause during a game in progress does not warn: %s", text)
	}
}

// An arena page's note after a join or a withdrawal comes from a code in
// its address: a link someone else crafts cannot put words of theirs on
// the page, and the codes say the amounts the tournament's fee makes.
func TestArenaPageNotesCannotBeWrittenByALink(t *testing.T) {
	a, clk := tournamentApp(t)
	ann := a.newPlayer(t)
	ar := newArena(t, a, clk, ann, map[string]any{"entryFeeMinor": 2_500_000})
	cookie := a.sessionCookie(t, ann.wallet)
	for _, tc := range []struct{ done, want, not string }{
		{"Your+account+is+locked%3A+call+555-0100", "", "Your account is locked"},
		{"in-paid", "You are in: 2.50 USDC entry fee locked until the end.", ""},
		{"refunded", "You left the arena: 2.50 USDC refunded.", ""},
	} {
		r := a.do(t, request{path: "/arenas/" + ar.id + "?done=" + tc.done, header: map[string]string{"Cookie": cookie, "Accept": "text/html"}})
		text := visibleText(r.Body.String())
		if r.Code != http.StatusOK {
			t.Fatalf("?done=%s: %d", tc.done, r.Code)
		}
		if tc.want != "" && !strings.Contains(text, tc.want) {
			t.Errorf("?done=%s: the page does not say %q: %s", tc.done, tc.want, text)
		}
		if tc.not != "" && strings.Contains(text, tc.not) {
			t.Errorf("?done=%s: the page says what the link wrote: %s", tc.done, text)
		}
	}
}
