package game_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
)

func TestActRefusals(t *testing.T) {
	p := newPlatform(t)
	gameID, a, b := p.match(t, "rps", stake, "")
	c4, c4first, c4second := p.match(t, "connect4", stake, "")
	stranger := p.newPlayer(t, funds)
	p.play(t, a, gameID, `"rock"`)
	p.play(t, c4first, c4, `{"column": 3}`)

	for _, tc := range []struct {
		name, user, game, typ, move, code string
	}{
		{"someone who is not a player", stranger, gameID, "move", `"rock"`, domain.CodeNotAPlayer},
		{"an unknown game", a, uuid.NewString(), "move", `"rock"`, domain.CodeNotFound},
		{"not a game id", a, "42", "move", `"rock"`, domain.CodeNotFound},
		{"an unknown action type", b, gameID, "dance", "", domain.CodeValidation},
		{"a move without a move", b, gameID, "move", "", domain.CodeValidation},
		{"not an rps choice", b, gameID, "move", `"lizard"`, domain.CodeInvalidMove},
		{"a second choice in the round", a, gameID, "move", `"paper"`, domain.CodeAlreadyMoved},
		{"out of turn in connect4", c4first, c4, "move", `{"column": 3}`, domain.CodeNotYourTurn},
		{"outside the connect4 board", c4second, c4, "move", `{"column": 7}`, domain.CodeInvalidMove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []string
			if _, err := uuid.Parse(tc.game); err == nil {
				before = p.eventNames(t, tc.game)
			}
			r, err := p.act(tc.user, tc.game, tc.typ, tc.move)
			wantCode(t, "Act", err, tc.code)
			if r.Accepted {
				t.Errorf("answer: got %+v, want not accepted", r)
			}
			if before != nil {
				wantNames(t, "events after a refused action", p.eventNames(t, tc.game), before)
			}
		})
	}
	for _, u := range []string{a, b} {
		if got, want := p.balances(t, u), (balances{funds - stake, stake}); got != want {
			t.Errorf("balances of %s after refused actions: got %+v, want %+v", u, got, want)
		}
	}
}

// reveal is the data of game:rps:round:reveal as clients read it.
type reveal = rules.RPSRound

// A whole rps game through Act: a drawn round replayed, rounds won on both
// sides, and the first to two wins takes the pot less the fee.
func TestRPSGameToAWin(t *testing.T) {
	ctx := context.Background()
	p := newPlatform(t)
	gameID, a, b := p.match(t, "rps", stake, "")
	treasury := p.balance(t, money.Treasury)

	rounds := []rpsChoices{
		{"rock", "rock"},      // a drawn round: replayed
		{"rock", "scissors"},  // a 1-0
		{"paper", "scissors"}, // b 1-1
		{"scissors", "paper"}, // a 2-1: a wins
	}
	var last game.ActResult
	for i, r := range rounds {
		got := p.play(t, a, gameID, fmt.Sprintf("%q", r.a))
		if !got.Accepted || got.Status != game.StatusActive {
			t.Errorf("round %d, first choice: got %+v, want accepted with the game active", i+1, got)
		}
		last = p.play(t, b, gameID, fmt.Sprintf("%q", r.b))
	}
	if last != (game.ActResult{Accepted: true, Status: game.StatusCompleted, Seq: 18}) {
		t.Errorf("the winning move's answer: got %+v, want accepted, completed, seq 18", last)
	}

	round := []string{"game:rps:round:submitted", "game:rps:round:submitted", "game:rps:round:reveal"}
	want := []string{"game:started", "game:rps:round:start"}
	for i := range rounds {
		want = append(want, round...)
		if i < len(rounds)-1 {
			want = append(want, "game:rps:round:start")
		}
	}
	want = append(want, "game:completed")
	wantNames(t, "events", p.eventNames(t, gameID), want)

	wantRevealsOpenCommitments(t, p, gameID, a, b, rounds)

	fee := int64(2 * stake / 100)
	g := p.game(t, gameID)
	if g.Status != game.StatusCompleted || g.WinnerID == nil || *g.WinnerID != a {
		t.Fatalf("game: got status %s, winner %v; want completed, won by %s", g.Status, g.WinnerID, a)
	}
	if g.EndedAt == nil || !g.EndedAt.Equal(p.clock.now()) || g.Deadline != nil {
		t.Errorf("ended at %v with deadline %v; want ended at %v with no deadline", g.EndedAt, g.Deadline, p.clock.now())
	}
	wantResult := game.Result{WinnerID: &a, Reason: "score", Settlement: game.Settlement{PotMinor: 2 * stake,
		PlayerPotMinor: 2 * stake, FeeMinor: fee, PayoutMinor: 2*stake - fee, EscrowAddress: p.settlement.EscrowAddress(gameID).String()}}
	if g.Result == nil || !sameResult(*g.Result, wantResult) {
		t.Errorf("result:\n got  %+v\n want %+v", g.Result, wantResult)
	}
	var completed game.Completed
	evs := p.events(t, gameID)
	if err := json.Unmarshal(evs[len(evs)-1].Data, &completed); err != nil {
		t.Fatal(err)
	}
	if completed.GameID != gameID || completed.Status != game.StatusCompleted || !sameResult(completed.Result, wantResult) {
		t.Errorf("game:completed: got %+v, want the game's result", completed)
	}
	meta, err := p.games.Metadata(ctx, gameID)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := meta.History.([]rules.RPSRound); !ok || len(h) != len(rounds) {
		t.Errorf("history of the finished game: got %#v, want %d rounds", meta.History, len(rounds))
	}
	if meta.LastSeq != 18 {
		t.Errorf("last seq: got %d, want 18", meta.LastSeq)
	}

	if got, want := p.balances(t, a), (balances{funds - stake + 2*stake - fee, 0}); got != want {
		t.Errorf("winner's balances: got %+v, want %+v", got, want)
	}
	if got, want := p.balances(t, b), (balances{funds - stake, 0}); got != want {
		t.Errorf("loser's balances: got %+v, want %+v", got, want)
	}
	if got := p.balance(t, money.Treasury) - treasury; got != fee {
		t.Errorf("treasury: got +%d, want +%d (floor of 1%% of %d)", got, fee, 2*stake)
	}
	for _, u := range []string{a, b} {
		if got := p.currentGame(t, u); got != "" {
			t.Errorf("%s still in game %s after the end", u, got)
		}
	}

	wantNoActionAfterTheEnd(t, p, gameID, a, b)
}

// rpsChoices are the two players' choices in one round.
type rpsChoices struct{ a, b string }

// wantRevealsOpenCommitments checks that every reveal of the game opens
// the commitments published when the choices were made, and scores the
// round as the rules say: the choices of rounds, a's and b's.
func wantRevealsOpenCommitments(t *testing.T, p *platform, gameID, a, b string, rounds []rpsChoices) {
	t.Helper()
	commitments := map[string]string{} // by round and user
	revealed := 0
	for _, e := range p.events(t, gameID) {
		switch e.Name {
		case "game:rps:round:submitted":
			var s rules.RPSSubmitted
			if err := json.Unmarshal(e.Data, &s); err != nil {
				t.Fatal(err)
			}
			commitments[fmt.Sprint(s.Round, s.UserID)] = s.Commitment
		case "game:rps:round:reveal":
			var r reveal
			if err := json.Unmarshal(e.Data, &r); err != nil {
				t.Fatal(err)
			}
			want := rounds[revealed]
			revealed++
			if r.Round != revealed || r.Reason != "played" {
				t.Errorf("reveal %d: got round %d, reason %s; want round %d, played", revealed, r.Round, r.Reason, revealed)
			}
			for user, choice := range map[string]string{a: want.a, b: want.b} {
				if r.Choices[user] == nil || *r.Choices[user] != choice || r.Salts[user] == nil {
					t.Errorf("round %d: %s's choice: got %v, want %s with its salt", r.Round, user, r.Choices[user], choice)
					continue
				}
				c := rules.Commitment(gameID, r.Round, user, choice, *r.Salts[user])
				if c != commitments[fmt.Sprint(r.Round, user)] || c != r.Commitments[user] {
					t.Errorf("round %d: %s's reveal does not open the published commitment", r.Round, user)
				}
			}
		}
	}
	if revealed != len(rounds) {
		t.Errorf("reveals: got %d, want %d", revealed, len(rounds))
	}
}

// wantNoActionAfterTheEnd checks that a finished game takes no more
// actions, from its players a and b or anyone else.
func wantNoActionAfterTheEnd(t *testing.T, p *platform, gameID, a, b string) {
	t.Helper()
	ctx := context.Background()
	_, err := p.act(a, gameID, "move", `"rock"`)
	wantCode(t, "a move after the end", err, domain.CodeGameNotActive)
	_, err = p.act(b, gameID, "resign", "")
	wantCode(t, "a resignation after the end", err, domain.CodeGameNotActive)
	_, err = p.act(p.newPlayer(t, 0), gameID, "move", `"rock"`)
	wantCode(t, "a stranger's move after the end", err, domain.CodeNotAPlayer)
	_, err = p.games.PublicState(ctx, gameID)
	wantCode(t, "the live state of a finished game", err, domain.CodeGameNotActive)
	if got := len(p.events(t, gameID)); got != 18 {
		t.Errorf("events after refused actions: got %d, want 18", got)
	}
}

func sameResult(a, b game.Result) bool {
	if (a.WinnerID == nil) != (b.WinnerID == nil) || (a.WinnerID != nil && *a.WinnerID != *b.WinnerID) {
		return false
	}
	return a.Reason == b.Reason && a.Draw == b.Draw && reflect.DeepEqual(a.Settlement, b.Settlement)
}

func TestResignation(t *testing.T) {
	for _, tc := range []struct {
		gameType, event string
		resigner        int
	}{
		{"rps", "game:rps:resign", 0},
		{"rps", "game:rps:resign", 1},
		{"connect4", "game:connect4:resign", 1}, // not on turn: resigning needs no turn
	} {
		t.Run(fmt.Sprintf("%s seat %d", tc.gameType, tc.resigner), func(t *testing.T) {
			p := newPlatform(t)
			gameID, a, b := p.match(t, tc.gameType, stake, "")
			seats := []string{a, b}
			resigner, winner := seats[tc.resigner], seats[1-tc.resigner]
			r, err := p.act(resigner, gameID, "resign", "")
			if err != nil || r.Status != game.StatusCompleted {
				t.Fatalf("resign: got %+v, %v; want completed", r, err)
			}
			names := p.eventNames(t, gameID)
			wantNames(t, "last events", names[len(names)-2:], []string{tc.event, "game:completed"})
			g := p.game(t, gameID)
			if g.WinnerID == nil || *g.WinnerID != winner || g.Result == nil || g.Result.Reason != "resign" {
				t.Errorf("game: got winner %v, result %+v; want %s by resign", g.WinnerID, g.Result, winner)
			}
			fee := int64(2 * stake / 100)
			if got, want := p.balances(t, winner), (balances{funds + stake - fee, 0}); got != want {
				t.Errorf("winner's balances: got %+v, want %+v", got, want)
			}
		})
	}
}

// drawGame fills the Connect Four board with no four in a row anywhere.
var drawGame = []int{1, 5, 4, 0, 2, 4, 6, 1, 6, 4, 5, 5, 0, 5, 5, 5, 1, 2, 4, 0, 0, 0, 0, 1, 2, 6, 1, 3, 3, 2, 2, 4, 4, 2, 3, 1, 6, 3, 3, 6, 3, 6}

// A drawn game is completed (not cancelled) with no winner, and gives the
// stakes back: no fee is taken.
func TestConnectFourDrawGivesTheStakesBack(t *testing.T) {
	p := newPlatform(t)
	gameID, a, b := p.match(t, "connect4", stake, "")
	treasury := p.balance(t, money.Treasury)
	seats := []string{a, b}
	var last game.ActResult
	for i, col := range drawGame {
		last = p.play(t, seats[i%2], gameID, fmt.Sprintf(`{"column": %d}`, col))
	}
	if last.Status != game.StatusCompleted {
		t.Fatalf("after the last move: got %+v, want completed", last)
	}
	g := p.game(t, gameID)
	if g.Status != game.StatusCompleted || g.WinnerID != nil || g.Result == nil || !g.Result.Draw ||
		g.Result.Reason != "board-full" || g.Result.FeeMinor != 0 || g.Result.PayoutMinor != 0 || g.Result.PotMinor != 2*stake {
		t.Errorf("game: got status %s, winner %v, result %+v; want a completed board-full draw of a %d pot, no fee or payout",
			g.Status, g.WinnerID, g.Result, 2*stake)
	}
	for _, u := range seats {
		if got := p.balances(t, u); got != (balances{funds, 0}) {
			t.Errorf("balances of %s: got %+v, want %+v", u, got, balances{funds, 0})
		}
	}
	if got := p.balance(t, money.Treasury); got != treasury {
		t.Errorf("treasury: got %d, want %d", got, treasury)
	}
}

// Deadlines are rows: ExpireDue applies the timeout rules to every active
// game whose deadline passed by the service's clock, and to no other.
func TestExpireDue(t *testing.T) {
	for _, tc := range expireCases {
		t.Run(tc.name, func(t *testing.T) { expireDue(t, tc) })
	}
}

// expireCase is a game left to a deadline, and what expiring it does.
type expireCase struct {
	name      string
	gameType  string
	moves     func(t testing.TB, p *platform, gameID, a, b string)
	after     time.Duration
	advanced  int
	newEvents []string
	status    string
	winner    int // seat of the winner; -1 for none
	reason    string
	scores    map[int]int // rps scores by seat, when the game goes on
}

// expireCases are the games that ExpireDue meets.
var expireCases = []expireCase{
	{
		name: "rps round where one player chose", gameType: "rps",
		moves: func(t testing.TB, p *platform, gameID, a, b string) { p.play(t, a, gameID, `"paper"`) },
		after: 20 * time.Second, advanced: 1,
		newEvents: []string{"game:rps:round:reveal", "game:rps:round:start"},
		status:    game.StatusActive, winner: -1, scores: map[int]int{0: 1, 1: 0},
	},
	{
		name: "rps round where nobody chose", gameType: "rps",
		after: 20 * time.Second, advanced: 1,
		newEvents: []string{"game:rps:round:reveal", "game:completed"},
		status:    game.StatusCancelled, winner: -1, reason: "abandoned",
	},
	{
		name: "rps round one second before its deadline", gameType: "rps",
		after: 19 * time.Second, advanced: 0,
		status: game.StatusActive, winner: -1, scores: map[int]int{0: 0, 1: 0},
	},
	{
		name: "connect4 turn that ran out", gameType: "connect4",
		after: 30 * time.Second, advanced: 1,
		newEvents: []string{"game:connect4:timeout", "game:completed"},
		status:    game.StatusCompleted, winner: 1, reason: "timeout",
	},
	{
		name: "connect4 second turn that ran out", gameType: "connect4",
		moves: func(t testing.TB, p *platform, gameID, a, b string) { p.play(t, a, gameID, `{"column": 0}`) },
		after: 30 * time.Second, advanced: 1,
		newEvents: []string{"game:connect4:timeout", "game:completed"},
		status:    game.StatusCompleted, winner: 0, reason: "timeout",
	},
}

func expireDue(t *testing.T, tc expireCase) {
	ctx := context.Background()
	p := newPlatform(t)
	gameID, a, b := p.match(t, tc.gameType, stake, "")
	seats := []string{a, b}
	treasury := p.balance(t, money.Treasury)
	if tc.moves != nil {
		tc.moves(t, p, gameID, a, b)
	}
	before := p.eventNames(t, gameID)

	p.clock.advance(tc.after)
	n, err := p.games.ExpireDue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != tc.advanced {
		t.Errorf("games advanced: got %d, want %d", n, tc.advanced)
	}
	got := p.eventNames(t, gameID)
	wantNames(t, "new events", got[len(before):], tc.newEvents)
	g := p.game(t, gameID)
	if g.Status != tc.status {
		t.Errorf("status: got %s, want %s", g.Status, tc.status)
	}
	if tc.winner >= 0 && (g.WinnerID == nil || *g.WinnerID != seats[tc.winner]) {
		t.Errorf("winner: got %v, want seat %d (%s)", g.WinnerID, tc.winner, seats[tc.winner])
	}
	if tc.winner < 0 && g.WinnerID != nil {
		t.Errorf("winner: got %s, want none", *g.WinnerID)
	}
	if tc.reason != "" && (g.Result == nil || g.Result.Reason != tc.reason) {
		t.Errorf("result: got %+v, want reason %s", g.Result, tc.reason)
	}
	fee := int64(2 * stake / 100)
	for seat, u := range seats {
		want := balances{funds - stake, stake} // still in play
		switch {
		case g.Status == game.StatusCancelled:
			want = balances{funds, 0}
		case g.Status == game.StatusCompleted && seat == tc.winner:
			want = balances{funds + stake - fee, 0}
		case g.Status == game.StatusCompleted:
			want = balances{funds - stake, 0}
		}
		if got := p.balances(t, u); got != want {
			t.Errorf("balances of seat %d: got %+v, want %+v", seat, got, want)
		}
	}
	wantFee := int64(0)
	if g.Status == game.StatusCompleted {
		wantFee = fee
	}
	if got := p.balance(t, money.Treasury) - treasury; got != wantFee {
		t.Errorf("treasury: got +%d, want +%d", got, wantFee)
	}
	if tc.scores != nil {
		view, err := p.games.PublicState(ctx, gameID)
		if err != nil {
			t.Fatal(err)
		}
		for seat, want := range tc.scores {
			if got := view.Base().Scores[seats[seat]]; got != want {
				t.Errorf("score of seat %d: got %d, want %d", seat, got, want)
			}
		}
		if g.Deadline == nil || !g.Deadline.After(p.clock.now()) {
			t.Errorf("deadline of the running game: got %v, want one after %v", g.Deadline, p.clock.now())
		}
	}
	// Nothing is left to expire until the next deadline.
	if n, err := p.games.ExpireDue(ctx); err != nil || n != 0 {
		t.Errorf("a second run: got %d, %v; want 0", n, err)
	}
}

// The timer decides, not how soon the deadline worker runs: a choice made
// at the deadline is refused even though the round is not closed yet.
func TestAMoveAtTheDeadlineIsRefused(t *testing.T) {
	p := newPlatform(t)
	gameID, a, _ := p.match(t, "rps", stake, `{"roundSeconds": 5}`)
	before := p.eventNames(t, gameID)
	p.clock.advance(5 * time.Second)
	_, err := p.act(a, gameID, "move", `"rock"`)
	wantCode(t, "a choice at the deadline", err, domain.CodeInvalidMove)
	wantNames(t, "events", p.eventNames(t, gameID), before)
	n, err := p.games.ExpireDue(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("ExpireDue: got %d, %v; want 1", n, err)
	}
	if g := p.game(t, gameID); g.Status != game.StatusCancelled {
		t.Errorf("status: got %s, want cancelled (nobody chose in time)", g.Status)
	}
}
