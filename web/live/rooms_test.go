package live

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"wager/domain"
)

// fannedOut returns a game room that fanned out events 1..n, and the
// store that holds them.
func fannedOut(t *testing.T, n int) (*room, *memStore) {
	t.Helper()
	s := newMemStore()
	var evs []Event
	for range n {
		evs = append(evs, s.add("g", "move", map[string]int{"n": len(evs) + 1}))
	}
	r := newRoom(domain.GameStreamOf("g"), 0)
	r.mu.Lock()
	r.fanOutLocked(r.renderJSON(evs, false), time.Time{})
	r.mu.Unlock()
	return r, s
}

// framesOf reads n frames queued on c.
func framesOf(c *Conn, n int) [][]byte {
	out := make([][]byte, 0, n)
	for range n {
		out = append(out, <-c.Frames())
	}
	return out
}

// seqsOf returns the seqs of frames; a frame that is not an event counts
// as seq -1.
func seqsOf(t *testing.T, frames [][]byte) []int {
	t.Helper()
	out := make([]int, 0, len(frames))
	for _, b := range frames {
		var f struct {
			Type string `json:"type"`
			Seq  int    `json:"seq"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Type != "event" {
			f.Seq = -1
		}
		out = append(out, f.Seq)
	}
	return out
}

func wantRun(t *testing.T, what string, got []int, from, to int) {
	t.Helper()
	if len(got) != to-from+1 {
		t.Fatalf("%s: got seqs %v, want %d..%d", what, got, from, to)
	}
	for i, seq := range got {
		if seq != from+i {
			t.Fatalf("%s: got seqs %v, want %d..%d in order", what, got, from, to)
		}
	}
}

// A resume after seq N is answered from the room's memory with exactly
// the frames after N, in order, and the connection is a member from the
// room's seq on: nothing twice, nothing missed.
func TestSeqRoomResumesWithExactlyTheFramesAfterASeq(t *testing.T) {
	r, _ := fannedOut(t, 20)
	h := &Hub{writeWait: time.Second}
	c := NewConn("u", JSON)
	noStore := func(context.Context, int, int) ([]frame, error) {
		t.Fatal("the room's memory reaches back to seq 7: nothing is read from the store")
		return nil, nil
	}
	after := 7
	for joined := false; !joined; {
		r.mu.Lock()
		var b backlog
		b, joined = r.joinLocked(nil, c, after, false, 0)
		r.mu.Unlock()
		if joined {
			break
		}
		if !b.memory {
			t.Fatalf("a resume after seq %d of a room at seq 20: not answered from memory", after)
		}
		var ok bool
		var err error
		if after, ok, err = h.catchUp(context.Background(), c, after, b, noStore); err != nil || !ok {
			t.Fatalf("catch up: %v, %v", ok, err)
		}
	}
	wantRun(t, "the resume after seq 7", seqsOf(t, framesOf(c, len(c.Frames()))), 8, 20)
	if m := r.members[c]; m == nil || m.after != 20 {
		t.Fatalf("member after the resume: %+v, want one at seq 20", m)
	}
	if c.left(r.stream) != r {
		t.Error("the connection does not list the room it joined")
	}
}

// A seq older than the room's memory is not answered from it: the join
// reads exactly the events after that seq from the store, in order.
func TestSeqRoomOlderThanItsMemoryReadsTheStore(t *testing.T) {
	total := ringLen + 30
	r, s := fannedOut(t, total)
	h := &Hub{writeWait: time.Second}
	c := NewConn("u", JSON)
	r.mu.Lock()
	b, joined := r.joinLocked(nil, c, 3, false, 0)
	r.mu.Unlock()
	if joined || b.memory || b.upTo != total {
		t.Fatalf("a join after seq 3 of a room that keeps seqs %d..%d: joined %v, from memory %v, up to %d",
			total-ringLen+1, total, joined, b.memory, b.upTo)
	}
	got := make(chan [][]byte)
	go func() { got <- framesOf(c, total-3) }() // the socket's writer, draining while the join queues
	read := func(ctx context.Context, after, limit int) ([]frame, error) {
		evs, err := s.Events(ctx, domain.GameStreamOf("g"), after, limit)
		return r.renderJSON(evs, false), err
	}
	after, ok, err := h.catchUp(context.Background(), c, 3, b, read)
	if err != nil || !ok || after != total {
		t.Fatalf("catch up from the store: at %d, %v, %v; want at %d", after, ok, err, total)
	}
	wantRun(t, "the join after seq 3", seqsOf(t, <-got), 4, total)
}

// A member whose queue is full does not hold up the fan-out: it leaves
// the room with a resync frame naming the room, its connection no longer
// lists the room, and the others get the event. (A tournament's room:
// the game's is exercised through the hub in
// TestASubscriberThatFallsBehindIsToldToResyncAndMissesNothing.)
func TestARoomResyncsAFullQueueInsteadOfWaiting(t *testing.T) {
	r := newRoom(domain.TournamentStreamOf("t"), 0)
	slow, fine := NewConn("slow", JSON), NewConn("fine", JSON)
	for _, c := range []*Conn{slow, fine} {
		r.mu.Lock()
		_, joined := r.joinLocked(nil, c, 0, false, 0)
		r.mu.Unlock()
		if !joined {
			t.Fatal("a join at the room's seq must need no catching up")
		}
	}
	for i := range queueLen {
		if !slow.deliver(fmt.Appendf(nil, `{"type":"filler","n":%d}`, i)) {
			t.Fatalf("filling the queue: frame %d not taken", i)
		}
	}
	frames := r.renderJSON([]Event{{Stream: r.stream, Seq: 1, Name: "tournament:standings", Data: json.RawMessage(`{}`)}}, false)
	r.mu.Lock()
	r.fanOutLocked(frames, time.Time{}) // returns: nothing waits for the slow socket
	_, stillIn := r.members[slow]
	seq := r.seq
	r.mu.Unlock()
	if stillIn || seq != 1 {
		t.Fatalf("after the fan-out: the slow socket still a member %v, the room at seq %d", stillIn, seq)
	}
	if slow.left(r.stream) != nil {
		t.Error("the slow socket still lists the room it was taken out of")
	}
	var last []byte
	for range len(slow.Frames()) {
		last = <-slow.Frames()
	}
	if want := `{"type":"resync-tournament","tournamentId":"t"}`; string(last) != want {
		t.Errorf("the slow socket's last frame: %s, want %s", last, want)
	}
	if got := seqsOf(t, framesOf(fine, 1)); got[0] != 1 {
		t.Errorf("the other member got %v, want seq 1", got)
	}
}

// TestABurstLargerThanAQueueReachesAMemberWithoutAResync: a batch of more
// events than a socket's queue holds (an arena's start pairs hundreds of
// games in one transaction) reaches a member that reads at its own pace,
// every event once and in order, without a resync, and the member then
// gets live events as before.
func TestABurstLargerThanAQueueReachesAMemberWithoutAResync(t *testing.T) {
	for _, st := range []domain.Stream{domain.TournamentStreamOf("t"), domain.GameStreamOf("g")} {
		t.Run(st.Kind.String(), func(t *testing.T) {
			s := newMemStore()
			h := newTestHub(t, s)
			c := NewConn("u", JSON)
			if err := h.Join(context.Background(), c, st, 0, 0, false, 0); err != nil {
				t.Fatal(err)
			}
			const n = 5 * queueLen // past the room's memory too: the rest is read from the store
			var batch []Event
			for i := range n {
				batch = append(batch, s.addTo(st, "tournament:pairing", map[string]int{"i": i}))
			}
			h.Committed(batch)
			got := drain(t, c, n)
			if got.resyncs != 0 {
				t.Fatalf("the member was told to resync after %d of the burst's %d events", len(got.seqs), n)
			}
			wantSeqs(t, "the member", got.seqs, 1, n)
			h.Committed([]Event{s.addTo(st, "tournament:standings", map[string]int{})})
			wantSeqs(t, "the member after the burst", drain(t, c, 1).seqs, n+1, n+1)
		})
	}
}
