package rules

import (
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"wager/domain"
)

const gid = "game-1"

var duo = []string{"ann", "bob"}

func startRPS(t *testing.T, settings string) (State, []Event) {
	t.Helper()
	st, events, err := RPS{}.Start(gid, duo, json.RawMessage(settings), t0)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return st, events
}

// choose makes a move that must succeed.
func choose(t *testing.T, st State, player, choice string, now time.Time, rand io.Reader) []Event {
	t.Helper()
	events, err := st.Move(player, json.RawMessage(`"`+choice+`"`), now, rand)
	if err != nil {
		t.Fatalf("%s plays %s: %v", player, choice, err)
	}
	return events
}

func names(events []Event) []string {
	out := []string{}
	for _, e := range events {
		out = append(out, string(e.Name))
	}
	return out
}

// decoded is v marshalled and decoded again, as a client sees it.
func decoded(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func wantNames(t *testing.T, what string, events []Event, want ...string) {
	t.Helper()
	if got := names(events); !slices.Equal(got, want) {
		t.Fatalf("%s: events %q, want %q", what, got, want)
	}
}

func TestRPSStart(t *testing.T) {
	st, events := startRPS(t, `{"rounds": 5, "roundSeconds": 10}`)
	wantNames(t, "start", events, "game:rps:round:start")
	wantDeadline := t0.Add(10 * time.Second)
	if got, want := decoded(t, events[0].Data), map[string]any{"round": 1.0, "deadline": wantDeadline.Format(time.RFC3339Nano),
		"roundSeconds": 10.0}; !reflect.DeepEqual(got, want) {
		t.Errorf("round start data:\n got %v\nwant %v", got, want)
	}
	if !st.Deadline().Equal(wantDeadline) {
		t.Errorf("Deadline() = %v, want %v", st.Deadline(), wantDeadline)
	}
	view := st.Public(t0.Add(2500 * time.Millisecond))
	got := decoded(t, view)
	for _, k := range []string{"players", "round", "timer", "scores", "history", "submitted", "commitments"} {
		if _, ok := got[k]; !ok {
			t.Errorf("Public has no %q: %v", k, got)
		}
	}
	// the demo bots reads who submitted in process.
	if sub := view.(*RPSView).Submitted; len(sub) != 2 || sub["ann"] || sub["bob"] {
		t.Errorf("submitted = %#v, want map[string]bool{ann:false bob:false}", sub)
	}
	want := map[string]any{"number": 1.0, "phase": "choosing", "deadline": wantDeadline.Format(time.RFC3339Nano)}
	if !reflect.DeepEqual(got["round"], want) {
		t.Errorf("round = %v, want %v", got["round"], want)
	}
	if timer := got["timer"].(map[string]any); timer["remainingMs"] != 7500.0 || timer["deadline"] != want["deadline"] {
		t.Errorf("timer = %v, want remainingMs 7500 and deadline %v", timer, want["deadline"])
	}
	if o := st.Outcome(); o.Done {
		t.Errorf("Outcome() = %+v at the start", o)
	}
}

func TestRPSGameToAWin(t *testing.T) {
	st, _ := startRPS(t, `{"rounds": 3, "roundSeconds": 20}`)
	rand := seeded(1)
	steps := []struct {
		ann, bob     string
		winner       any
		scores       map[string]any
		next         bool // a new round starts
		annAt, bobAt time.Duration
	}{
		{"rock", "scissors", "ann", map[string]any{"ann": 1.0, "bob": 0.0}, true, time.Second, 3 * time.Second},
		{"rock", "paper", "bob", map[string]any{"ann": 1.0, "bob": 1.0}, true, 5 * time.Second, 4 * time.Second},
		{"scissors", "paper", "ann", map[string]any{"ann": 2.0, "bob": 1.0}, false, 7 * time.Second, 8 * time.Second},
	}
	now := t0
	for i, s := range steps {
		round := i + 1
		e1 := choose(t, st, "ann", s.ann, now.Add(s.annAt), rand)
		wantNames(t, "first move", e1, "game:rps:round:submitted")
		if pub := decoded(t, st.Public(now)); pub["submitted"].(map[string]any)["ann"] != true {
			t.Errorf("round %d: submitted %v, want ann true", round, pub["submitted"])
		}
		now = now.Add(s.bobAt)
		e2 := choose(t, st, "bob", s.bob, now, rand)
		if s.next {
			wantNames(t, "second move", e2, "game:rps:round:submitted", "game:rps:round:reveal", "game:rps:round:start")
		} else {
			wantNames(t, "deciding move", e2, "game:rps:round:submitted", "game:rps:round:reveal")
		}
		rev := decoded(t, e2[1].Data)
		if rev["round"] != float64(round) || rev["winnerId"] != s.winner || rev["reason"] != "played" ||
			!reflect.DeepEqual(rev["scores"], s.scores) ||
			!reflect.DeepEqual(rev["choices"], map[string]any{"ann": s.ann, "bob": s.bob}) {
			t.Errorf("round %d reveal = %v\nwant winner %v, scores %v, choices ann %s bob %s", round, rev, s.winner, s.scores, s.ann, s.bob)
		}
		// Every commitment checks out against the revealed choice and salt,
		// and is the one published when the move was made.
		commits := map[string]any{"ann": decoded(t, e1[0].Data)["commitment"], "bob": decoded(t, e2[0].Data)["commitment"]}
		for _, p := range duo {
			salt, _ := rev["salts"].(map[string]any)[p].(string)
			choice := rev["choices"].(map[string]any)[p].(string)
			if c := Commitment(gid, round, p, choice, salt); len(salt) != 32 || c != rev["commitments"].(map[string]any)[p] || c != commits[p] {
				t.Errorf("round %d %s: commitment %v (published %v), recomputed from salt %q: %s", round, p,
					rev["commitments"].(map[string]any)[p], commits[p], salt, c)
			}
		}
		if s.next {
			if st := decoded(t, e2[2].Data); st["round"] != float64(round+1) || st["deadline"] != now.Add(20*time.Second).Format(time.RFC3339Nano) {
				t.Errorf("next round start = %v, want round %d deadline %v", st, round+1, now.Add(20*time.Second))
			}
		}
	}
	if got, want := st.Outcome(), (Outcome{Done: true, Winner: "ann", Reason: "score"}); got != want {
		t.Fatalf("Outcome() = %+v, want %+v", got, want)
	}
	if !st.Deadline().IsZero() {
		t.Errorf("Deadline() = %v after the end, want zero", st.Deadline())
	}
	pub := decoded(t, st.Public(now))
	if pub["round"].(map[string]any)["phase"] != "finished" || len(pub["history"].([]any)) != 3 ||
		pub["timer"].(map[string]any)["remainingMs"] != 0.0 {
		t.Errorf("public view after the end: %v", pub)
	}
	// Nothing more can happen.
	if _, err := st.Move("bob", json.RawMessage(`"rock"`), now, rand); code(err) != domain.CodeGameNotActive {
		t.Errorf("move after the end: %v, want GAME_NOT_ACTIVE", err)
	}
	if _, err := st.Resign("bob", now); code(err) != domain.CodeGameNotActive {
		t.Errorf("resign after the end: %v, want GAME_NOT_ACTIVE", err)
	}
	if e := st.Expire(now.Add(time.Hour)); e != nil {
		t.Errorf("Expire after the end: %v, want nil", e)
	}
}

func TestRPSDrawRoundIsReplayed(t *testing.T) {
	st, _ := startRPS(t, `{"rounds": 1}`)
	rand := seeded(2)
	choose(t, st, "ann", "paper", t0, rand)
	events := choose(t, st, "bob", "paper", t0.Add(time.Second), rand)
	wantNames(t, "draw", events, "game:rps:round:submitted", "game:rps:round:reveal", "game:rps:round:start")
	rev := decoded(t, events[1].Data)
	if rev["winnerId"] != nil || !reflect.DeepEqual(rev["scores"], map[string]any{"ann": 0.0, "bob": 0.0}) {
		t.Errorf("draw reveal = %v, want winnerId null and scores 0-0", rev)
	}
	if n := decoded(t, events[2].Data)["round"]; n != 2.0 {
		t.Errorf("replay is round %v, want 2", n)
	}
	if o := st.Outcome(); o.Done {
		t.Fatalf("a draw round ended the game: %+v", o)
	}
	choose(t, st, "bob", "rock", t0.Add(2*time.Second), rand)
	wantNames(t, "decider", choose(t, st, "ann", "paper", t0.Add(3*time.Second), rand), "game:rps:round:submitted", "game:rps:round:reveal")
	if got, want := st.Outcome(), (Outcome{Done: true, Winner: "ann", Reason: "score"}); got != want {
		t.Errorf("Outcome() = %+v, want %+v", got, want)
	}
}

func TestRPSRefusedMoves(t *testing.T) {
	st, _ := startRPS(t, "")
	rand := seeded(3)
	choose(t, st, "ann", "rock", t0, rand)
	deadline := st.Deadline()
	tests := []struct {
		name, player, move string
		at                 time.Time
		want               string
	}{
		{"second move in a round", "ann", `"paper"`, t0, domain.CodeAlreadyMoved},
		{"same move again", "ann", `"rock"`, t0, domain.CodeAlreadyMoved},
		{"lizard", "bob", `"lizard"`, t0, domain.CodeInvalidMove},
		{"a number", "bob", `5`, t0, domain.CodeInvalidMove},
		{"an object", "bob", `{"choice":"rock"}`, t0, domain.CodeInvalidMove},
		{"capitalized", "bob", `"Rock"`, t0, domain.CodeInvalidMove},
		{"null", "bob", `null`, t0, domain.CodeInvalidMove},
		{"empty", "bob", ``, t0, domain.CodeInvalidMove},
		{"bad JSON", "bob", `"rock`, t0, domain.CodeInvalidMove},
		{"at the deadline", "bob", `"rock"`, deadline, domain.CodeInvalidMove},
		{"after the deadline", "bob", `"rock"`, deadline.Add(time.Minute), domain.CodeInvalidMove},
		{"not a player", "cy", `"rock"`, t0, domain.CodeNotAPlayer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := st.MarshalJSON()
			events, err := st.Move(tt.player, json.RawMessage(tt.move), tt.at, rand)
			if code(err) != tt.want || events != nil {
				t.Errorf("Move(%s, %s) = %v, %v; want %s and no events", tt.player, tt.move, events, err, tt.want)
			}
			if after, _ := st.MarshalJSON(); string(after) != string(before) {
				t.Errorf("a refused move changed the state:\n got %s\nwant %s", after, before)
			}
		})
	}
	if _, err := st.Resign("cy", t0); code(err) != domain.CodeNotAPlayer {
		t.Errorf("Resign by a non-player: %v, want NOT_A_PLAYER", err)
	}
	if _, err := st.Move("bob", json.RawMessage(`"rock"`), t0, strings.NewReader("short")); err == nil {
		t.Errorf("Move with a failing rand succeeded")
	}
}

func TestRPSTimeoutWithOneMover(t *testing.T) {
	st, _ := startRPS(t, `{"rounds": 3, "roundSeconds": 5}`)
	choose(t, st, "bob", "scissors", t0.Add(time.Second), seeded(4))
	deadline := st.Deadline()
	if e := st.Expire(deadline.Add(-time.Nanosecond)); e != nil {
		t.Fatalf("Expire before the deadline = %v, want nil", e)
	}
	now := deadline.Add(700 * time.Millisecond) // the expiry job runs a little late
	events := st.Expire(now)
	wantNames(t, "timeout", events, "game:rps:round:reveal", "game:rps:round:start")
	rev := decoded(t, events[0].Data)
	if rev["winnerId"] != "bob" || rev["reason"] != "timeout" ||
		!reflect.DeepEqual(rev["choices"], map[string]any{"ann": nil, "bob": "scissors"}) ||
		rev["salts"].(map[string]any)["ann"] != nil || rev["salts"].(map[string]any)["bob"] == nil ||
		!reflect.DeepEqual(rev["scores"], map[string]any{"ann": 0.0, "bob": 1.0}) {
		t.Errorf("timeout reveal = %v\nwant bob wins the round with scissors, ann's choice null", rev)
	}
	if want := now.Add(5 * time.Second); !st.Deadline().Equal(want) {
		t.Errorf("next round deadline %v, want %v (from when the round closed)", st.Deadline(), want)
	}
	// Bob also wins the next round by ann's absence: that is the game, 2-0
	// in a best of 3, which is flawless, and won on time (a way to throw
	// a game, which holds its bets for review).
	choose(t, st, "bob", "rock", now, seeded(5))
	wantNames(t, "second timeout", st.Expire(st.Deadline()), "game:rps:round:reveal")
	if got, want := st.Outcome(), (Outcome{Done: true, Winner: "bob", Reason: "score", Flawless: true, TimedOut: true}); got != want {
		t.Errorf("Outcome() = %+v, want %+v", got, want)
	}
}

func TestRPSTimeoutWithNoMoverIsAbandoned(t *testing.T) {
	st, _ := startRPS(t, `{"rounds": 3}`)
	rand := seeded(6)
	choose(t, st, "ann", "rock", t0, rand)
	choose(t, st, "bob", "scissors", t0, rand) // ann leads 1-0
	events := st.Expire(st.Deadline())
	wantNames(t, "abandoned", events, "game:rps:round:reveal")
	if rev := decoded(t, events[0].Data); rev["reason"] != "abandoned" || rev["winnerId"] != nil || rev["round"] != 2.0 {
		t.Errorf("abandoned reveal = %v", rev)
	}
	if got, want := st.Outcome(), (Outcome{Done: true, Reason: "abandoned"}); got != want {
		t.Errorf("Outcome() = %+v, want %+v", got, want)
	}
	if !st.Deadline().IsZero() {
		t.Errorf("Deadline() = %v after the end, want zero", st.Deadline())
	}
}

func TestRPSResignMidRoundRevealsNothing(t *testing.T) {
	st, _ := startRPS(t, `{"rounds": 3}`)
	// Draw a salt we can recognize.
	rec := &recorder{r: seeded(7)}
	choose(t, st, "ann", "rock", t0, rec)
	choose(t, st, "bob", "paper", t0, rec) // round 1 revealed: rock and paper may appear from now on
	rec.buf = nil
	var all []Event
	all = append(all, choose(t, st, "ann", "scissors", t0.Add(time.Second), rec)...)
	salt := rec.salt()
	events, err := st.Resign("bob", t0.Add(2*time.Second))
	if err != nil {
		t.Fatalf("Resign: %v", err)
	}
	all = append(all, events...)
	wantNames(t, "resign", events, "game:rps:resign")
	if got, want := st.Outcome(), (Outcome{Done: true, Winner: "ann", Reason: "resign"}); got != want {
		t.Errorf("Outcome() = %+v, want %+v", got, want)
	}
	views := []string{mustJSON(t, st.Public(t0.Add(3*time.Second))), mustJSON(t, st.Outcome())}
	for _, e := range all {
		views = append(views, mustJSON(t, e.Data))
	}
	for _, v := range views {
		if strings.Contains(v, "scissors") || strings.Contains(v, salt) {
			t.Errorf("ann's unrevealed choice (scissors, salt %s) shows: %s", salt, v)
		}
	}
	// Not even the stored state keeps it: it can never be revealed.
	if raw, _ := st.MarshalJSON(); strings.Contains(string(raw), "scissors") || strings.Contains(string(raw), salt) {
		t.Errorf("the stored state keeps the discarded choice: %s", raw)
	}
	if _, err := st.Resign("ann", t0); code(err) != domain.CodeGameNotActive {
		t.Errorf("second resign: %v, want GAME_NOT_ACTIVE", err)
	}
}

func TestRPSStateSurvivesLoad(t *testing.T) {
	st, _ := startRPS(t, `{"rounds": 1, "roundSeconds": 30}`)
	choose(t, st, "ann", "paper", t0.Add(time.Second), seeded(8))
	raw, err := st.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := RPS{}.Load(raw)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if again, _ := loaded.MarshalJSON(); string(again) != string(raw) {
		t.Fatalf("round trip changed the state:\n got %s\nwant %s", again, raw)
	}
	if got, want := mustJSON(t, loaded.Public(t0)), mustJSON(t, st.Public(t0)); got != want {
		t.Errorf("Public after Load:\n got %s\nwant %s", got, want)
	}
	if !loaded.Deadline().Equal(st.Deadline()) {
		t.Errorf("Deadline after Load %v, want %v", loaded.Deadline(), st.Deadline())
	}
	if _, err := loaded.Move("ann", json.RawMessage(`"rock"`), t0.Add(2*time.Second), seeded(9)); code(err) != domain.CodeAlreadyMoved {
		t.Errorf("ann moves again after Load: %v, want ALREADY_MOVED", err)
	}
	events := choose(t, loaded, "bob", "rock", t0.Add(2*time.Second), seeded(9))
	wantNames(t, "reveal after Load", events, "game:rps:round:submitted", "game:rps:round:reveal")
	if rev := decoded(t, events[1].Data); rev["choices"].(map[string]any)["ann"] != "paper" || rev["winnerId"] != "ann" {
		t.Errorf("reveal after Load = %v, want ann's hidden paper to beat rock", rev)
	}
}

// recorder is a rand source that remembers what it handed out.
type recorder struct {
	r   io.Reader
	buf []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// salt is the hex of the bytes read since buf was last cleared.
func (r *recorder) salt() string {
	const hexdigits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(r.buf))
	for _, b := range r.buf {
		out = append(out, hexdigits[b>>4], hexdigits[b&15])
	}
	return string(out)
}

// The platform was down when round 1's deadline passed: Resume gives the
// round its full time again from the moment the service is back. Ann's
// choice made before the outage stands, and Bob may still choose, so the
// round is decided by the choices.
func TestRPSResumeGivesTheRoundItsFullTimeAgain(t *testing.T) {
	st, _ := startRPS(t, `{"rounds": 1, "roundSeconds": 5}`)
	choose(t, st, "ann", "rock", t0.Add(time.Second), seeded(10))
	back := t0.Add(20 * time.Second) // 15 s after the deadline
	if !st.Resume(back) {
		t.Fatal("Resume of a running game = false, want true")
	}
	if want := back.Add(5 * time.Second); !st.Deadline().Equal(want) {
		t.Fatalf("Deadline() after Resume = %v, want %v (back + roundSeconds)", st.Deadline(), want)
	}
	if v := decoded(t, st.Public(back)); v["timer"].(map[string]any)["remainingMs"] != 5000.0 ||
		v["round"].(map[string]any)["number"] != 1.0 || v["submitted"].(map[string]any)["ann"] != true {
		t.Errorf("Public after Resume = %v, want round 1 with 5000 ms left and ann's choice made", v)
	}
	if e := st.Expire(back.Add(5*time.Second - time.Nanosecond)); e != nil {
		t.Fatalf("Expire before the new deadline = %v, want nil", e)
	}
	if _, err := st.Move("ann", json.RawMessage(`"paper"`), back, seeded(11)); code(err) != domain.CodeAlreadyMoved {
		t.Errorf("ann chooses again after Resume: %v, want ALREADY_MOVED", err)
	}
	events := choose(t, st, "bob", "paper", back.Add(4*time.Second), seeded(11))
	wantNames(t, "bob's choice after Resume", events, "game:rps:round:submitted", "game:rps:round:reveal")
	if rev := decoded(t, events[1].Data); rev["reason"] != "played" || rev["winnerId"] != "bob" ||
		rev["choices"].(map[string]any)["ann"] != "rock" {
		t.Errorf("reveal after Resume = %v, want bob's paper to beat ann's rock, played", rev)
	}
	if got, want := st.Outcome(), (Outcome{Done: true, Winner: "bob", Reason: "score", Flawless: false}); got != want {
		t.Errorf("Outcome() = %+v, want %+v", got, want)
	}
	before, _ := st.MarshalJSON()
	if st.Resume(back.Add(time.Minute)) || !st.Deadline().IsZero() {
		t.Errorf("Resume of a finished game = true or a deadline %v, want false and none", st.Deadline())
	}
	if after, _ := st.MarshalJSON(); string(after) != string(before) {
		t.Errorf("Resume changed a finished game:\n got %s\nwant %s", after, before)
	}
}
