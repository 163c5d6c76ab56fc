package rules

import (
	crand "crypto/rand"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestViewsFollowTheirEventsToThePublicView plays random games of every
// type (moves, refused moves, timeouts, resignations, resumes after an
// outage) and checks after every step that a view taken in at any earlier
// step, followed by the events since, is the game's Public view: what a
// live page shows from the events alone is what a reload would show.
func TestViewsFollowTheirEventsToThePublicView(t *testing.T) {
	for _, gameType := range []string{"rps", "connect4"} {
		t.Run(gameType, func(t *testing.T) {
			for seed := range uint64(300) {
				playAndFollow(t, gameType, seed)
			}
		})
	}
}

func playAndFollow(t *testing.T, gameType string, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	r, _ := Get(gameType)
	players := []string{"p1", "p2"}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	settings := json.RawMessage(`{"rounds": 5, "roundSeconds": 10}`)
	if gameType == "connect4" {
		settings = json.RawMessage(`{"turnSeconds": 10}`)
	}
	st, opening, err := r.Start("g", players, settings, now)
	if err != nil {
		t.Fatal(err)
	}
	// followers[0] starts before the opening events; the others join at
	// random steps, from the Public view of then.
	first := st.Public(now)
	blank(first)
	followers := []View{first}
	apply := func(evs []Event) {
		for _, e := range evs {
			data, err := json.Marshal(e.Data)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range followers {
				if err := v.Apply(e.Name, data); err != nil {
					t.Fatalf("seed %d: apply %s: %v", seed, e.Name, err)
				}
			}
		}
	}
	apply(opening)
	for step := 0; !st.Outcome().Done && step < 500; step++ {
		now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
		var evs []Event
		switch k := rng.IntN(100); {
		case k < 2:
			evs, _ = st.Resign(players[rng.IntN(2)], now)
		case k < 5:
			if st.Resume(now) {
				// As game:resumed tells it: the deadline the views show.
				shown := st.Public(now).Base().Round.Deadline
				for _, v := range followers {
					v.Base().Round.Deadline, v.Base().Timer.Deadline = shown, shown
				}
			}
		case k < 12:
			evs = st.Expire(now)
		case k < 16:
			evs, _ = st.Berserk(players[rng.IntN(2)], now)
		default:
			var move json.RawMessage
			if gameType == "rps" {
				move, _ = json.Marshal([]string{"rock", "paper", "scissors", "lizard"}[rng.IntN(4)])
			} else {
				move, _ = json.Marshal(map[string]int{"column": rng.IntN(8)})
			}
			evs, _ = st.Move(players[rng.IntN(2)], move, now, crand.Reader)
		}
		apply(evs)
		want := st.Public(now)
		blank(want)
		wantJSON := mustMarshal(t, want)
		for i, v := range followers {
			if got := mustMarshal(t, v); got != wantJSON {
				t.Fatalf("seed %d, step %d: the view followed from step %d is\n%s\nwant the public view\n%s", seed, step,
					i, got, wantJSON)
			}
		}
		if rng.IntN(10) == 0 {
			followers = append(followers, want)
		}
	}
}

// blank zeroes what only a clock knows.
func blank(v View) { v.Base().Timer.RemainingMs = 0 }

func mustMarshal(t *testing.T, v View) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAViewRefusesDataItCannotRead: an event whose data does not decode is
// an error, and changes nothing.
func TestAViewRefusesDataItCannotRead(t *testing.T) {
	st, _, err := RPS{}.Start("g", []string{"p1", "p2"}, nil, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	v := st.Public(time.Now())
	before := mustMarshal(t, v)
	if err := v.Apply("game:rps:round:reveal", json.RawMessage(`{"round": "two"}`)); err == nil ||
		!strings.Contains(err.Error(), "game:rps:round:reveal") {
		t.Fatalf("a reveal that does not decode: %v, want an error naming it", err)
	}
	if err := v.Apply("game:chat:message", json.RawMessage(`{"text": "hi"}`)); err != nil {
		t.Fatalf("another kind of event: %v", err)
	}
	if after := mustMarshal(t, v); after != before {
		t.Fatalf("the view changed from %s to %s", before, after)
	}
}

// TestAConnectFourViewFollowsAFullBoardAndAWin: the endings random play
// seldom reaches.
func TestAConnectFourViewFollowsAFullBoardAndAWin(t *testing.T) {
	for _, columns := range [][]int{drawGame, {6, 5, 5, 4, 4, 3, 4, 3, 0, 3, 3}} {
		st, opening := startC4(t, "")
		v := st.Public(t0)
		for _, e := range opening {
			data, _ := json.Marshal(e.Data)
			if err := v.Apply(e.Name, data); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range columns {
			at := t0.Add(time.Duration(i) * time.Second)
			evs, err := st.Move(duo[i%2], json.RawMessage(`{"column": `+strconv.Itoa(c)+`}`), at, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				data, _ := json.Marshal(e.Data)
				if err := v.Apply(e.Name, data); err != nil {
					t.Fatal(err)
				}
			}
			want := st.Public(at)
			blank(want)
			blank(v)
			if got, want := mustMarshal(t, v), mustMarshal(t, want); got != want {
				t.Fatalf("after move %d the view is\n%s\nwant\n%s", i+1, got, want)
			}
		}
	}
}
