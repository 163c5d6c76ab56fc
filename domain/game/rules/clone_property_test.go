package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// cloneCase is a game type and the moves a random player may try in it
// (an illegal one among them).
type cloneCase struct {
	rules    Rules
	settings string
	moves    []string
}

var cloneCases = map[string]cloneCase{
	"rps":      {RPS{}, `{"rounds": 5, "roundSeconds": 10}`, []string{`"rock"`, `"paper"`, `"scissors"`, `"lizard"`}},
	"connect4": {ConnectFour{}, `{"turnSeconds": 30}`, []string{"0", "1", "2", "3", "4", "5", "6", "9"}},
}

// action is one random thing that may happen to a game: a move, a
// resignation, a timeout or a resumption, at a time.
type action struct {
	kind, player string
	move         json.RawMessage
	at           time.Time
	salt         uint64
}

func (a action) apply(st State) ([]Event, error) {
	switch a.kind {
	case "move":
		return st.Move(a.player, a.move, a.at, seeded(a.salt))
	case "resign":
		return st.Resign(a.player, a.at)
	case "expire":
		return st.Expire(a.at), nil
	}
	st.Resume(a.at)
	return nil, nil
}

func randomAction(rng *rand.Rand, c cloneCase, st State, now time.Time) action {
	a := action{player: []string{"ann", "bob", "eve"}[rng.IntN(3)], at: now, salt: rng.Uint64()}
	switch n := rng.IntN(40); {
	case n == 0:
		a.kind = "resign"
	case n < 4:
		a.kind, a.at = "expire", st.Deadline().Add(time.Duration(rng.IntN(3)-1)*time.Second)
	case n == 4:
		a.kind = "resume"
	default:
		a.kind, a.move = "move", json.RawMessage(c.moves[rng.IntN(len(c.moves))])
	}
	return a
}

// outcomeOf is what an action did, as JSON to compare.
func outcomeOf(t *testing.T, st State, events []Event, err error) string {
	t.Helper()
	raw, merr := st.MarshalJSON()
	if merr != nil {
		t.Fatal(merr)
	}
	ev, merr := json.Marshal(events)
	if merr != nil {
		t.Fatal(merr)
	}
	return fmt.Sprintf("state %s\nevents %s\nerror %v", raw, ev, err)
}

// The game service keeps a game's state decoded and clones it before each
// move instead of decoding its JSON again. Over random games of each type,
// every action on a clone does exactly what it does on a state decoded
// from the same JSON (state, events, error), and leaves the state it was
// cloned from, and another clone, as they were.
func TestACloneMovesAsTheDecodedStateAndChangesNothingElse(t *testing.T) {
	for name, c := range cloneCases {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(300) {
				rng := rand.New(rand.NewPCG(seed, 0xc10e))
				now := t0
				st, _, err := c.rules.Start("g", []string{"ann", "bob"}, json.RawMessage(c.settings), now)
				if err != nil {
					t.Fatal(err)
				}
				for step := 0; step < 300 && !st.Outcome().Done; step++ {
					now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
					a := randomAction(rng, c, st, now)
					raw, err := st.MarshalJSON()
					if err != nil {
						t.Fatal(err)
					}
					decoded, err := c.rules.Load(raw)
					if err != nil {
						t.Fatal(err)
					}
					clone, other := st.Clone(), st.Clone()
					evD, errD := a.apply(decoded)
					want := outcomeOf(t, decoded, evD, errD)
					evC, errC := a.apply(clone)
					if got := outcomeOf(t, clone, evC, errC); got != want {
						t.Fatalf("seed %d step %d %+v: the clone did\n%s\nthe decoded state\n%s", seed, step, a, got, want)
					}
					// Another action on another clone, then this one's again.
					b := action{kind: "move", player: []string{"ann", "bob"}[rng.IntN(2)], at: now, salt: rng.Uint64(),
						move: json.RawMessage(c.moves[rng.IntN(len(c.moves))])}
					b.apply(other)
					if got := outcomeOf(t, clone, evC, errC); got != want {
						t.Fatalf("seed %d step %d: moving another clone changed this one:\n%s\nwas\n%s", seed, step, got, want)
					}
					if after, _ := st.MarshalJSON(); !bytes.Equal(after, raw) {
						t.Fatalf("seed %d step %d %+v: moving clones changed their original:\n%s\nwas\n%s", seed, step, a, after, raw)
					}
					st = clone
				}
			}
		})
	}
}
