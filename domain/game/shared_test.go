package game_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"wager/domain/game"
	"wager/domain/notify"
)

// heard knows the newest event of each game from what the instance
// published, as the live hub does: the games it read stay in memory
// (game.Service's rows) and serve reads and moves from there until an
// event after them is published.
type heard struct {
	noCrowd
	sink *recorder
}

func (h heard) LatestSeq(gameID string) (int, bool) {
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	latest, known := 0, false
	for _, p := range h.sink.got {
		for _, e := range p.Events {
			if e.Stream.ID == gameID {
				latest, known = max(latest, e.Seq), true
			}
		}
	}
	return latest, known
}

// A Game that Service.Game hands out shares its slices, pointers and raw
// JSON with every other read of the game from memory, and with the moves
// computed from it: none of them may change what it reaches, and a
// caller's changes to its own copy's fields reach nobody else.
func TestAGameHandedOutIsNotChangedByLaterMovesAndReads(t *testing.T) {
	p := newPlatform(t)
	log := slog.New(slog.DiscardHandler)
	p.games = game.New(p.db, p.clock.now, log, game.Deps{Events: p.eventLog, Notify: notify.New(p.db, p.eventLog, p.clock.now),
		Settle: payOut{p}, Live: heard{sink: p.sink}, EscrowOf: func(id string) string { return p.settlement.EscrowAddress(id).String() }})
	gameID, a, b := p.match(t, "rps", stake, "")

	first := p.game(t, gameID)
	again := p.game(t, gameID)
	if &first.Players[0] != &again.Players[0] || &first.State[0] != &again.State[0] {
		t.Fatal("the second read did not come from memory: this test would prove nothing")
	}
	was, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string) {
		t.Helper()
		if now, _ := json.Marshal(first); string(now) != string(was) {
			t.Fatalf("%s, the game handed out before changed:\n%s\nwas\n%s", when, now, was)
		}
	}

	// The caller's own copy: its fields are its own.
	again.Status, again.Seq, again.Players = "changed", -1, append(again.Players, "someone")
	if g := p.game(t, gameID); g.Status != game.StatusActive || g.Seq != first.Seq || len(g.Players) != 2 {
		t.Fatalf("a caller's change to its copy reached the next read: %+v", g)
	}
	unchanged("after a caller changed its copy")

	// Two rounds won by a: three moves stored at once from the game in
	// memory (the second starts a round with a new deadline), and the last
	// one ends the game in a transaction.
	for i, m := range []struct{ by, choice string }{{a, "rock"}, {b, "scissors"}, {a, "rock"}, {b, "scissors"}} {
		p.clock.advance(time.Second)
		r := p.play(t, m.by, gameID, `"`+m.choice+`"`)
		if i < 3 {
			unchanged("after a move")
			if g := p.game(t, gameID); g.Seq != r.Seq || r.Status != game.StatusActive {
				t.Fatalf("move %d answered %+v; the game in memory is at seq %d", i+1, r, g.Seq)
			}
		} else if r.Status != game.StatusCompleted {
			t.Fatalf("the last move: %+v, want the game completed", r)
		}
	}
	unchanged("after the move that ended the game")
	if g := p.game(t, gameID); g.Status != game.StatusCompleted {
		t.Fatalf("after the end: %+v", g)
	}
	unchanged("after a read of the finished game")
}
