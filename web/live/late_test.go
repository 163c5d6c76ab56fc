package live

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"wager/domain"
)

// lateFrame is what the tests read of a frame a late spectator gets.
type lateFrame struct {
	Type  string `json:"type"`
	Event string `json:"event"`
	Seq   int    `json:"seq"`
	Ahead bool   `json:"ahead"`
}

// frameNow reads the frames c has now (none arriving within wait).
func framesNow(t *testing.T, c *Conn, wait time.Duration) []lateFrame {
	t.Helper()
	var out []lateFrame
	for {
		select {
		case f := <-c.Frames():
			var m lateFrame
			if err := json.Unmarshal(f, &m); err != nil {
				t.Fatalf("frame %s: %v", f, err)
			}
			if m.Event != string(domain.EventSpectators) {
				out = append(out, m)
			}
		case <-time.After(wait):
			return out
		}
	}
}

// lateHub is a running hub on a clock the test moves (advance), with its
// store.
func lateHub(t *testing.T) (context.Context, *Hub, *memStore, func() time.Time, func(time.Duration)) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := newMemStore()
	h := New(s, testPages{s}, soloPresence{}, kinds(s, testPages{s}), "test", slog.New(slog.DiscardHandler), Options{Now: clock})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.Run(ctx)
	return ctx, h, s, clock, advance
}

// In a room whose spectators see it late, a player gets every event at
// once; a spectator gets the chat at once (ahead), and every event in seq
// order once it is the delay old, the chat again in its place; a
// spectator who joins again from the seq it has gets the same, and never
// an event before it is due.
func TestLateSpectatorsSeeTheGameLateAndTheChatAtOnce(t *testing.T) {
	ctx, h, s, clock, advance := lateHub(t)
	const delay = 5 * time.Second
	room := domain.GameStreamOf("g")
	commit := func(name domain.EventName) {
		e := s.add("g", name, map[string]int{})
		s.mu.Lock()
		s.evs[room][e.Seq-1].CreatedAt = clock()
		e = s.evs[room][e.Seq-1]
		s.mu.Unlock()
		h.Committed([]Event{e})
	}
	player, watcher := NewConn("p", JSON), NewConn("w", JSON)
	if err := h.Join(ctx, player, room, 0, 0, true, delay); err != nil {
		t.Fatal(err)
	}
	if err := h.Join(ctx, watcher, room, 0, 0, false, delay); err != nil {
		t.Fatal(err)
	}

	// A late spectator's delay counts from the fan-out: each commit is
	// fanned out (the player has it) before the clock moves.
	commit(domain.EventConnect4Move) // 1
	if got := framesNow(t, player, 300*time.Millisecond); len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("the player got %+v, want seq 1 at once", got)
	}
	advance(time.Second)
	commit(domain.EventChatMessage)  // 2
	commit(domain.EventConnect4Move) // 3
	if got := framesNow(t, player, 300*time.Millisecond); len(got) != 2 || got[1].Seq != 3 {
		t.Fatalf("the player got %+v, want seqs 2 and 3 at once", got)
	}
	got := framesNow(t, watcher, 300*time.Millisecond)
	if len(got) != 1 || got[0].Seq != 2 || !got[0].Ahead || got[0].Event != string(domain.EventChatMessage) {
		t.Fatalf("the spectator got %+v at once, want only the chat (seq 2) ahead", got)
	}

	advance(4 * time.Second) // move 1 is 5 s old, the others 4 s
	h.sweep(ctx)
	if got := framesNow(t, watcher, 300*time.Millisecond); len(got) != 1 || got[0].Seq != 1 || got[0].Ahead {
		t.Fatalf("after 5 s the spectator got %+v, want move 1 alone", got)
	}

	// Joining again from seq 1 (a reconnect): the chat ahead at once, the
	// rest when it is due.
	again := NewConn("w", JSON)
	if err := h.Join(ctx, again, room, 1, 1, false, delay); err != nil {
		t.Fatal(err)
	}
	if got := framesNow(t, again, 300*time.Millisecond); len(got) != 1 || got[0].Seq != 2 || !got[0].Ahead {
		t.Fatalf("a spectator joining from seq 1 got %+v, want the chat ahead alone", got)
	}
	advance(time.Second)
	h.sweep(ctx)
	for _, c := range []*Conn{watcher, again} {
		got := framesNow(t, c, 300*time.Millisecond)
		if len(got) != 2 || got[0].Seq != 2 || got[0].Ahead || got[1].Seq != 3 || got[1].Ahead {
			t.Fatalf("after 5 s more a spectator got %+v, want the chat and move 3 in their places", got)
		}
	}
	if got := framesNow(t, player, 100*time.Millisecond); len(got) != 0 {
		t.Fatalf("the player got %+v again", got)
	}
}

// A late spectator who joins from an old seq a room this instance opened
// later (at a player's join) misses nothing: the events that are due come
// from the store at once, the others from the store too, when they come
// due, in seq order, each once.
func TestALateSpectatorJoiningARoomOpenedAfterItsSeqMissesNothing(t *testing.T) {
	ctx, h, s, clock, advance := lateHub(t)
	const delay = 5 * time.Second
	room := domain.GameStreamOf("g")
	for i, age := range []time.Duration{9 * time.Second, 6 * time.Second, 2 * time.Second, time.Second} {
		e := s.add("g", domain.EventConnect4Move, map[string]int{"i": i})
		s.mu.Lock()
		s.evs[room][e.Seq-1].CreatedAt = clock().Add(-age)
		s.mu.Unlock()
	}
	if err := h.Join(ctx, NewConn("p", JSON), room, 4, 4, true, delay); err != nil { // the room opens at seq 4
		t.Fatal(err)
	}
	watcher := NewConn("w", JSON)
	if err := h.Join(ctx, watcher, room, 0, 4, false, delay); err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, f := range framesNow(t, watcher, 300*time.Millisecond) {
		seqs = append(seqs, f.Seq)
	}
	if len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
		t.Fatalf("the spectator got seqs %v at once, want 1 and 2 (the due ones)", seqs)
	}
	advance(4 * time.Second)
	h.sweep(ctx)
	seqs = nil
	for _, f := range framesNow(t, watcher, 300*time.Millisecond) {
		seqs = append(seqs, f.Seq)
	}
	if len(seqs) != 2 || seqs[0] != 3 || seqs[1] != 4 {
		t.Fatalf("once due the spectator got seqs %v, want 3 and 4", seqs)
	}
}
