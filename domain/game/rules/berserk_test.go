package rules

import (
	"encoding/json"
	"testing"
	"time"

	"wager/domain"
)

func start(t *testing.T, gameType, settings string) State {
	t.Helper()
	r, _ := Get(gameType)
	st, _, err := r.Start("g", []string{"a", "b"}, json.RawMessage(settings), t0)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func wantCode(t *testing.T, err error, code, what string) {
	t.Helper()
	if e, ok := err.(*domain.Error); !ok || e.Code != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}

// A player who goes berserk on their own Connect Four turn has half of it
// (and half of each later one), is refused a move past it, and loses on
// time at its end; the other player's turns keep their length.
func TestBerserkHalvesAConnectFourPlayersTurns(t *testing.T) {
	st := start(t, "connect4", `{"turnSeconds": 30}`)
	evs, err := st.Berserk("a", t0.Add(2*time.Second))
	if err != nil || len(evs) != 1 || evs[0].Name != domain.EventBerserk {
		t.Fatalf("berserk: %v %v", evs, err)
	}
	if d := evs[0].Data.(Berserked); d.Seconds != 15 || *d.Deadline != *timeString(t0.Add(15 * time.Second)) {
		t.Fatalf("berserk data: %+v (deadline %s)", d, *d.Deadline)
	}
	if !st.Deadline().Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("the turn running ends at %s, want 15 s after its start", st.Deadline())
	}
	_, err = st.Berserk("a", t0.Add(3*time.Second))
	wantCode(t, err, domain.CodeConflict, "berserk twice")
	if _, err := st.Move("a", json.RawMessage(`3`), t0.Add(14*time.Second), nil); err != nil {
		t.Fatalf("a move within the halved turn: %v", err)
	}
	// b's turn keeps its 30 s; b may still go berserk (b has not moved).
	if !st.Deadline().Equal(t0.Add(44 * time.Second)) {
		t.Fatalf("b's turn ends at %s, want 30 s after a's move", st.Deadline())
	}
	_, err = st.Berserk("a", t0.Add(15*time.Second))
	wantCode(t, err, domain.CodeConflict, "berserk after moving")
	if _, err := st.Move("b", json.RawMessage(`3`), t0.Add(20*time.Second), nil); err != nil {
		t.Fatal(err)
	}
	// a's next turn is 15 s: a move at 16 s is refused, and the turn is lost.
	if _, err := st.Move("a", json.RawMessage(`4`), t0.Add(36*time.Second), nil); err == nil {
		t.Fatal("a move 16 s into a halved turn was taken")
	}
	if evs := st.Expire(t0.Add(35 * time.Second)); len(evs) != 1 || st.Outcome().Winner != "b" || !st.Outcome().TimedOut {
		t.Fatalf("the halved turn's end: %v, %+v", evs, st.Outcome())
	}
	if !st.RanOutOfTime("a") || st.RanOutOfTime("b") {
		t.Fatal("whose time ran out: not a's alone")
	}
	if !st.Berserked("a") || st.Berserked("b") || st.Played("a") != 1 || st.Played("b") != 1 {
		t.Fatalf("berserked a %v b %v, played a %d b %d", st.Berserked("a"), st.Berserked("b"), st.Played("a"), st.Played("b"))
	}
}

// In rock, paper, scissors the round's common deadline stays; a player
// who went berserk must choose within half of it, and the round closes
// at their end when the other has chosen.
func TestBerserkHalvesAnRPSPlayersRounds(t *testing.T) {
	st := start(t, "rps", `{"rounds": 3, "roundSeconds": 20}`)
	if _, err := st.Berserk("a", t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if !st.Deadline().Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("nobody chose: the round closes at %s, want its own end", st.Deadline())
	}
	if _, err := st.Move("b", json.RawMessage(`"rock"`), t0.Add(2*time.Second), randReader{}); err != nil {
		t.Fatal(err)
	}
	if !st.Deadline().Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("b chose: the round closes at %s, want a's end 10 s in", st.Deadline())
	}
	_, err := st.Move("a", json.RawMessage(`"paper"`), t0.Add(10*time.Second), randReader{})
	wantCode(t, err, domain.CodeInvalidMove, "a's choice at its halved end")
	if evs := st.Expire(t0.Add(10 * time.Second)); len(evs) < 2 {
		t.Fatalf("the round did not close at a's end: %v", evs)
	}
	if !st.RanOutOfTime("a") || st.RanOutOfTime("b") {
		t.Fatal("whose time ran out in the round: not a's alone")
	}
	if v := st.Public(t0.Add(10 * time.Second)).Base(); v.Scores["b"] != 1 || v.Berserk["a"] != 10 {
		t.Fatalf("after the round: scores %v, berserk %v", v.Scores, v.Berserk)
	}
	_, err = st.Berserk("b", t0.Add(11*time.Second))
	wantCode(t, err, domain.CodeConflict, "berserk after a round was played")
	if st.Played("b") != 1 {
		t.Fatalf("played: %d rounds, want 1", st.Played("b"))
	}
}

// Half of a short round is never under three seconds, and a round that
// would not shrink cannot be halved; once half of a player's round or
// turn has passed, berserk would lose it at once and is refused.
func TestBerserkLeavesAtLeastThreeSecondsAndComesInTime(t *testing.T) {
	st := start(t, "rps", `{"rounds": 1, "roundSeconds": 7}`)
	evs, err := st.Berserk("b", t0)
	if err != nil || evs[0].Data.(Berserked).Seconds != MinBerserkSeconds {
		t.Fatalf("berserk of a 7 s round: %v %v", evs, err)
	}
	_, err = start(t, "rps", `{"rounds": 1, "roundSeconds": 3}`).Berserk("b", t0)
	wantCode(t, err, domain.CodeConflict, "berserk of a 3 s round (it cannot get shorter)")
	_, err = start(t, "rps", `{"rounds": 1, "roundSeconds": 20}`).Berserk("b", t0.Add(10*time.Second))
	wantCode(t, err, domain.CodeConflict, "berserk half way into the round")
	_, err = start(t, "connect4", `{"turnSeconds": 30}`).Berserk("a", t0.Add(15*time.Second))
	wantCode(t, err, domain.CodeConflict, "berserk half way into one's turn")
	if _, err := start(t, "connect4", `{"turnSeconds": 30}`).Berserk("b", t0.Add(15*time.Second)); err != nil {
		t.Fatalf("berserk during the other player's turn: %v", err)
	}
}

type randReader struct{}

func (randReader) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(i)
	}
	return len(b), nil
}
