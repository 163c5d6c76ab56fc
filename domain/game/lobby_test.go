package game_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wager/db"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/money"
)

func TestQueueMatchesTwoPlayersAndLocksTheirStakes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gameType string
		stake    int64
		first    []string // the opening events after game:started
	}{
		{"rps for a stake", "rps", stake, []string{"game:rps:round:start"}},
		{"connect4 for a stake", "connect4", 3 * usdc, []string{"game:connect4:start"}},
		{"a free rps game", "rps", 0, []string{"game:rps:round:start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := newPlatform(t)
			lobby := p.lobby(t, tc.gameType, tc.stake, "")
			a, b := p.newPlayer(t, funds), p.newPlayer(t, funds)
			treasury := p.balance(t, money.Treasury)

			r, err := p.games.JoinQueue(ctx, a, lobby)
			if err != nil || r != (game.JoinResult{Status: "queued"}) {
				t.Fatalf("first player: got %+v, %v; want queued", r, err)
			}
			if got := p.balances(t, a); got != (balances{funds, 0}) {
				t.Errorf("a queued player's balances: got %+v, want %+v (nothing locked while waiting)", got, balances{funds, 0})
			}
			ls, err := p.games.Lobbies(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				if l.ID == lobby && l.Queued != 1 {
					t.Errorf("lobby queue length: got %d, want 1", l.Queued)
				}
			}

			r, err = p.games.JoinQueue(ctx, b, lobby)
			if err != nil || r.Status != "matched" || r.GameID == "" {
				t.Fatalf("second player: got %+v, %v; want matched with a game id", r, err)
			}
			g := p.game(t, r.GameID)
			if g.Status != game.StatusActive || g.GameType != tc.gameType || g.StakeMinor != tc.stake {
				t.Errorf("game: got status %s, type %s, stake %d; want active %s for %d", g.Status, g.GameType, g.StakeMinor, tc.gameType, tc.stake)
			}
			if g.LobbyID == nil || *g.LobbyID != lobby {
				t.Errorf("game's lobby: got %v, want %s", g.LobbyID, lobby)
			}
			if want := []string{a, b}; !slices.Equal(g.Players, want) {
				t.Errorf("seats: got %v, want %v (the longest waiting first)", g.Players, want)
			}
			if g.Deadline == nil || !g.Deadline.After(p.clock.now()) {
				t.Errorf("deadline: got %v, want one after %v", g.Deadline, p.clock.now())
			}
			for _, u := range []string{a, b} {
				if got, want := p.balances(t, u), (balances{funds - tc.stake, tc.stake}); got != want {
					t.Errorf("balances of %s: got %+v, want %+v", u, got, want)
				}
				if got := p.currentGame(t, u); got != g.ID {
					t.Errorf("current game of %s: got %q, want %s", u, got, g.ID)
				}
				if n := p.sink.notices(u, "game:matched"); len(n) != 1 {
					t.Errorf("game:matched notices to %s: got %d, want 1", u, len(n))
				}
			}
			if got := p.balance(t, money.Treasury); got != treasury {
				t.Errorf("treasury: got %d, want %d (no fee before the end)", got, treasury)
			}
			wantNames(t, "opening events", p.eventNames(t, g.ID), append([]string{"game:started"}, tc.first...))
			var started game.Started
			if err := json.Unmarshal(p.events(t, g.ID)[0].Data, &started); err != nil {
				t.Fatal(err)
			}
			if started.GameID != g.ID || started.StakeMinor != tc.stake || len(started.Players) != 2 ||
				started.Players[0].UserID != a || started.Players[1].UserID != b || started.Players[1].Seat != 1 {
				t.Errorf("game:started: got %+v", started)
			}
			ls, err = p.games.Lobbies(ctx, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				if l.ID == lobby && l.Queued != 0 {
					t.Errorf("lobby queue length after the match: got %d, want 0", l.Queued)
				}
			}
		})
	}
}

// A refused join writes nothing: no queue place, no game, no money moved.
func TestJoinQueueRefusals(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	lobby := p.lobby(t, "rps", stake, "")
	elsewhere := p.lobby(t, "rps", stake, "")
	playing, _, _ := p.match(t, "rps", stake, "")
	inGame := p.game(t, playing).Players[0]
	waiting := p.newPlayer(t, funds)
	if _, err := p.games.JoinQueue(ctx, waiting, elsewhere); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user, lobby, code string
	}{
		{"a balance one unit short of the stake", p.newPlayer(t, stake-1), lobby, domain.CodeInsufficientFunds},
		{"no money at all", p.newPlayer(t, 0), lobby, domain.CodeInsufficientFunds},
		{"already playing a game", inGame, lobby, domain.CodeConflict},
		{"already waiting in another queue", waiting, lobby, domain.CodeConflict},
		{"an unknown lobby", p.newPlayer(t, funds), uuid.NewString(), domain.CodeNotFound},
		{"not a lobby id", p.newPlayer(t, funds), "lobby-1", domain.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, current := p.balances(t, tc.user), p.currentGame(t, tc.user)
			r, err := p.games.JoinQueue(ctx, tc.user, tc.lobby)
			wantCode(t, "JoinQueue", err, tc.code)
			if r.Status != "" {
				t.Errorf("answer: got %+v, want none", r)
			}
			if got := p.balances(t, tc.user); got != before {
				t.Errorf("balances: got %+v, want %+v (unchanged)", got, before)
			}
			if got := p.currentGame(t, tc.user); got != current {
				t.Errorf("current game: got %q, want %q", got, current)
			}
			// The next player who can pay is queued, not matched with the
			// refused one.
			next := p.newPlayer(t, funds)
			if r, err := p.games.JoinQueue(ctx, next, lobby); err != nil || r.Status != "queued" {
				t.Errorf("the next player: got %+v, %v; want queued (the refused player is not waiting)", r, err)
			}
			if err := p.games.LeaveQueue(ctx, next, lobby); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The player waiting elsewhere is still there, and the player in a
	// game still plays it.
	if got := p.currentGame(t, inGame); got != playing {
		t.Errorf("current game of the player in a game: got %q, want %s", got, playing)
	}
	if err := p.games.LeaveQueue(ctx, waiting, elsewhere); err != nil {
		t.Errorf("the waiting player's queue place: %v", err)
	}
}

func TestJoiningTheSameQueueTwiceQueuesOnce(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	lobby := p.lobby(t, "rps", stake, "")
	a := p.newPlayer(t, funds)
	for i := range 2 {
		if r, err := p.games.JoinQueue(ctx, a, lobby); err != nil || r.Status != "queued" {
			t.Fatalf("join %d: got %+v, %v; want queued", i+1, r, err)
		}
	}
	b := p.newPlayer(t, funds)
	r, err := p.games.JoinQueue(ctx, b, lobby)
	if err != nil || r.Status != "matched" {
		t.Fatalf("the opponent: got %+v, %v; want matched", r, err)
	}
	if want := []string{a, b}; !slices.Equal(p.game(t, r.GameID).Players, want) {
		t.Errorf("players: got %v, want %v", p.game(t, r.GameID).Players, want)
	}
}

// A waiting player whose balance no longer covers the stake when an
// opponent arrives is taken out of the queue and told why; the newcomer
// waits instead.
func TestQueueSkipsAPlayerWhoNoLongerCoversTheStake(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	lobby := p.lobby(t, "rps", stake, "")
	poor, rich := p.newPlayer(t, stake), p.newPlayer(t, funds)
	if _, err := p.games.JoinQueue(ctx, poor, lobby); err != nil {
		t.Fatal(err)
	}
	// Queued players keep their money available: this one spends some.
	p.move(t, "withdrawal", []money.Entry{{Account: money.Available(poor), Amount: -1}, {Account: money.Vault, Amount: 1}})

	r, err := p.games.JoinQueue(ctx, rich, lobby)
	if err != nil || r.Status != "queued" {
		t.Fatalf("the newcomer: got %+v, %v; want queued", r, err)
	}
	if err := p.games.LeaveQueue(ctx, poor, lobby); domain.ErrorCode(err) != domain.CodeNotFound {
		t.Errorf("the skipped player's queue place: LeaveQueue got %v, want NOT_FOUND (removed)", err)
	}
	notices := p.sink.notices(poor, "queue:removed")
	if len(notices) != 1 {
		t.Fatalf("queue:removed notices: got %d, want 1", len(notices))
	}
	var removed game.QueueRemoved
	if err := json.Unmarshal(notices[0], &removed); err != nil || removed.LobbyID != lobby || removed.Reason == "" {
		t.Errorf("queue:removed: got %s, want the lobby and a reason", notices[0])
	}
	if got := p.balances(t, poor); got != (balances{stake - 1, 0}) {
		t.Errorf("the skipped player's balances: got %+v", got)
	}
}

func TestLeaveQueue(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	first, second := p.lobby(t, "rps", 0, ""), p.lobby(t, "rps", 0, "")
	a := p.newPlayer(t, 0)
	wantCode(t, "leaving a queue one is not in", p.games.LeaveQueue(ctx, a, first), domain.CodeNotFound)
	wantCode(t, "leaving with a malformed lobby id", p.games.LeaveQueue(ctx, a, "x"), domain.CodeNotFound)
	if _, err := p.games.JoinQueue(ctx, a, first); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "leaving another lobby's queue", p.games.LeaveQueue(ctx, a, second), domain.CodeNotFound)
	if err := p.games.LeaveQueue(ctx, a, first); err != nil {
		t.Fatalf("leaving the queue: %v", err)
	}
	// Free again: another queue takes the player.
	if r, err := p.games.JoinQueue(ctx, a, second); err != nil || r.Status != "queued" {
		t.Errorf("joining another queue after leaving: got %+v, %v", r, err)
	}
}

func TestCreateLobbyValidates(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	u := p.newPlayer(t, 0)
	for _, tc := range []struct {
		name, gameType string
		stake          int64
		settings       string
		field          string
	}{
		{"unknown game type", "chess", 0, "", "gameType"},
		{"negative stake", "rps", -1, "", "stakeMinor"},
		{"stake over the maximum", "rps", game.MaxStake + 1, "", "stakeMinor"},
		{"even number of rounds", "rps", 0, `{"rounds": 2}`, "settings.rounds"},
		{"unknown setting", "connect4", 0, `{"rounds": 3}`, "settings.rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw json.RawMessage
			if tc.settings != "" {
				raw = json.RawMessage(tc.settings)
			}
			_, err := p.games.CreateLobby(ctx, u, tc.gameType, tc.stake, raw)
			wantCode(t, "CreateLobby", err, domain.CodeValidation)
			if e, ok := err.(*domain.Error); ok {
				if _, named := e.Fields[tc.field]; !named {
					t.Errorf("fields: got %v, want %s named", e.Fields, tc.field)
				}
			}
		})
	}
	l, err := p.games.CreateLobby(ctx, u, "rps", game.MaxStake, json.RawMessage(`{"rounds": 5}`))
	if err != nil {
		t.Fatalf("the largest stake: %v", err)
	}
	var settings map[string]any
	if err := json.Unmarshal(l.Settings, &settings); err != nil || settings["rounds"] != 5.0 || settings["roundSeconds"] != 20.0 ||
		settings["gameType"] != "rps" {
		t.Errorf("normalized settings: got %s, want rounds 5, the default roundSeconds 20 and the game type", l.Settings)
	}
}

// TestAPersonsFreeTableIsOfferedOnlyOnceItWaited steers the clock: a
// person's free table is among PeoplesFreeTables only for a moment after
// the person sat down (the demo bots ask for tables waiting since
// PeopleFirst ago), and a staked table never is.
func TestAPersonsFreeTableIsOfferedOnlyOnceItWaited(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	free, staked := p.lobby(t, "rps", 0, ""), p.lobby(t, "rps", stake, "")
	for _, l := range []string{free, staked} {
		if _, err := p.games.JoinQueue(ctx, p.newPlayer(t, funds), l); err != nil {
			t.Fatal(err)
		}
	}
	sat := p.clock.now()
	offered := func(since time.Time) bool {
		ids, err := p.games.PeoplesFreeTables(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ids, staked) {
			t.Errorf("a staked table was offered to the bots")
		}
		return slices.Contains(ids, free)
	}
	if offered(sat) {
		t.Error("a table was offered to the bots the moment its person sat down")
	}
	if !offered(sat.Add(time.Millisecond)) {
		t.Error("a table waiting since before the cut-off was not offered")
	}
}

// beforeStart runs its action (once) just before a game's start is sent
// to the database: what another request does between a join's read of
// the queue and its start.
type beforeStart struct {
	once   sync.Once
	action func()
}

func (h *beforeStart) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if strings.HasPrefix(e.Query, "WITH waited AS") && h.action != nil {
		h.once.Do(h.action)
	}
	return ctx
}
func (h *beforeStart) AfterQuery(context.Context, *bun.QueryEvent) {}

// A free lobby's joins run without a transaction when they can; they
// refuse what a transaction's join refuses, and a start that another
// request overtook (the waiting player left, the joiner joined another
// queue) starts nothing: nobody is put into a game they did not ask for,
// nor into two.
func TestFreeJoinsRefuseAndLoseRacesCleanly(t *testing.T) {
	ctx := context.Background()
	bdb := dbtest.DB(t)
	hook := &beforeStart{}
	p := newPlatformOn(t, db.WithQueryHook(bdb, hook), newClock())
	lobby, elsewhere := p.lobby(t, "rps", 0, ""), p.lobby(t, "rps", 0, "")
	playing, _, _ := p.match(t, "rps", 0, "")
	inGame := p.game(t, playing).Players[0]
	waiting := p.newPlayer(t, 0)
	if _, err := p.games.JoinQueue(ctx, waiting, elsewhere); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user, lobby, code string
	}{
		{"already playing a game", inGame, lobby, domain.CodeConflict},
		{"already waiting in another queue", waiting, lobby, domain.CodeConflict},
		{"an unknown lobby", p.newPlayer(t, 0), uuid.NewString(), domain.CodeNotFound},
	} {
		for _, someoneWaits := range []bool{false, true} {
			host := p.newPlayer(t, 0)
			if someoneWaits {
				if r, err := p.games.JoinQueue(ctx, host, lobby); err != nil || r.Status != "queued" {
					t.Fatalf("the host: %+v %v", r, err)
				}
			}
			r, err := p.games.JoinQueue(ctx, tc.user, tc.lobby)
			wantCode(t, tc.name, err, tc.code)
			if r.Status != "" {
				t.Errorf("%s: answer %+v, want none", tc.name, r)
			}
			if someoneWaits {
				if got := p.currentGame(t, host); got != "" {
					t.Errorf("%s: the waiting host is in game %s", tc.name, got)
				}
				if err := p.games.LeaveQueue(ctx, host, lobby); err != nil {
					t.Errorf("%s: the host no longer waits: %v", tc.name, err)
				}
			}
		}
	}
	if got := p.currentGame(t, inGame); got != playing {
		t.Errorf("the player in a game: now in %q, want %s", got, playing)
	}

	// The waiting player leaves after the joiner saw them wait: the joiner
	// waits instead.
	host, joiner := p.newPlayer(t, 0), p.newPlayer(t, 0)
	if _, err := p.games.JoinQueue(ctx, host, lobby); err != nil {
		t.Fatal(err)
	}
	hook.once, hook.action = sync.Once{}, func() {
		if err := p.games.LeaveQueue(ctx, host, lobby); err != nil {
			t.Error(err)
		}
	}
	if r, err := p.games.JoinQueue(ctx, joiner, lobby); err != nil || r.Status != "queued" {
		t.Fatalf("a joiner whose host left: got %+v, %v; want queued", r, err)
	}
	if got := p.currentGame(t, host); got != "" {
		t.Errorf("the host who left is in game %s", got)
	}
	if err := p.games.LeaveQueue(ctx, joiner, lobby); err != nil {
		t.Fatalf("the joiner does not wait: %v", err)
	}

	// The joiner joins another queue after seeing someone wait here: the
	// start here is refused, and the host still waits.
	if _, err := p.games.JoinQueue(ctx, host, lobby); err != nil {
		t.Fatal(err)
	}
	other := p.lobby(t, "rps", 0, "")
	hook.once, hook.action = sync.Once{}, func() {
		if r, err := p.games.JoinQueue(ctx, joiner, other); err != nil || r.Status != "queued" {
			t.Errorf("the joiner's other join: %+v %v", r, err)
		}
	}
	r, err := p.games.JoinQueue(ctx, joiner, lobby)
	wantCode(t, "a joiner who joined another queue meanwhile", err, domain.CodeConflict)
	if r.Status != "" || p.currentGame(t, host) != "" || p.currentGame(t, joiner) != "" {
		t.Errorf("got %+v; the host's game %q, the joiner's %q; want neither in a game", r, p.currentGame(t, host), p.currentGame(t, joiner))
	}
	if err := p.games.LeaveQueue(ctx, host, lobby); err != nil {
		t.Errorf("the host no longer waits: %v", err)
	}
	if err := p.games.LeaveQueue(ctx, joiner, other); err != nil {
		t.Errorf("the joiner no longer waits in the other queue: %v", err)
	}
	var games int
	if err := bdb.NewSelect().Table("games").Where("lobby_id = ?", lobby).ColumnExpr("count(*)").Scan(ctx, &games); err != nil || games != 0 {
		t.Errorf("%d games started at the lobby (%v), want none", games, err)
	}
}
