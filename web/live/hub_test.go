package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"wager/domain"
)

// memStore is the rooms' stored events in memory; the tests' rooms are
// games unless they say otherwise.
type memStore struct {
	mu    sync.Mutex
	evs   map[domain.Stream][]Event
	reads int
}

func newMemStore() *memStore { return &memStore{evs: map[domain.Stream][]Event{}} }

func (s *memStore) add(gameID string, name domain.EventName, data any) Event {
	return s.addTo(domain.GameStreamOf(gameID), name, data)
}

func (s *memStore) addTo(st domain.Stream, name domain.EventName, data any) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(data)
	e := Event{Stream: st, Seq: len(s.evs[st]) + 1, Name: name, Data: b}
	s.evs[st] = append(s.evs[st], e)
	return e
}

func (s *memStore) Events(_ context.Context, st domain.Stream, after, limit int) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var out []Event
	for _, e := range s.evs[st] {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *memStore) LastSeqs(_ context.Context, kind domain.StreamKind, ids []string) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, id := range ids {
		out[id] = len(s.evs[domain.Stream{Kind: kind, ID: id}])
	}
	return out, nil
}

func (s *memStore) last(gameID string) int { return s.lastOf(domain.GameStreamOf(gameID)) }

func (s *memStore) lastOf(st domain.Stream) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.evs[st])
}

// join answers joins of any room with the store's last seq.
func (s *memStore) join(kind domain.StreamKind) func(context.Context, string, string, int) (Joined, error) {
	return func(_ context.Context, id, _ string, _ int) (Joined, error) {
		return Joined{State: json.RawMessage(`{}`), Seq: s.lastOf(domain.Stream{Kind: kind, ID: id})}, nil
	}
}

// opener opens the page state of a room.
type opener interface {
	Open(ctx context.Context, gameID string) (PageState, error)
}

// kinds are the tests' kinds of rooms: games whose pages are opened by
// pages, and tournaments whose pages render nothing, both joined at the
// store's last seq.
func kinds(s *memStore, pages opener) map[domain.StreamKind]Kind {
	return map[domain.StreamKind]Kind{
		domain.GameStream: {Join: s.join(domain.GameStream), Open: pages.Open},
		domain.TournamentStream: {Join: s.join(domain.TournamentStream), Open: func(context.Context, string) (PageState, error) {
			return Stateless(func(evs []Event) [][]byte { return make([][]byte, len(evs)) }), nil
		}},
	}
}

// testPages renders each event as a div naming its seq, padded to the
// 16 KB of a large page fragment, from a state that only knows the seq it
// is at (the store's last when it was opened).
type testPages struct{ s *memStore }

func (p testPages) Open(_ context.Context, gameID string) (PageState, error) {
	return &testPageState{seq: p.s.last(gameID)}, nil
}

type testPageState struct {
	mu  sync.Mutex
	seq int
}

func (v *testPageState) Seq() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seq
}

func (v *testPageState) Events(evs []Event) ([][]byte, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([][]byte, len(evs))
	for i, e := range evs {
		if e.Seq > v.seq+1 {
			return nil, false
		}
		v.seq = max(v.seq, e.Seq)
		out[i] = []byte(fmt.Sprintf(`<div id="live-seq" data-seq="%d">%s</div>`, e.Seq, strings.Repeat(" ", 16<<10)))
	}
	return out, true
}

func (testPages) Crowd(n int) []byte {
	return []byte(fmt.Sprintf(`<span id="spectator-count">%d</span>`, n))
}

// Notice renders "balance" notices only, as their data in a div.
func (testPages) Notice(kind domain.NoticeKind, data json.RawMessage) []byte {
	if kind != "balance" {
		return nil
	}
	return []byte(`<div id="balance">` + string(data) + `</div>`)
}

// soloPresence is one instance alone.
type soloPresence struct{}

func (soloPresence) Publish(context.Context, string, map[string]int) error { return nil }
func (soloPresence) Others(context.Context, string) (map[string]int, error) {
	return map[string]int{}, nil
}
func (soloPresence) SetOnline(context.Context, string, []string, []string, bool) error { return nil }
func (soloPresence) SetRooms(context.Context, string, []domain.RoomMember, []domain.RoomMember, bool) error {
	return nil
}

func newTestHub(t testing.TB, s *memStore) *Hub {
	h := New(s, testPages{s}, soloPresence{}, kinds(s, testPages{s}), "test", slog.New(slog.DiscardHandler), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.Run(ctx)
	return h
}

// publish stores n events of a game and hands them to the hub as this
// instance's commits, in batches of three like a round of moves.
func publish(h *Hub, s *memStore, gameID string, n int) {
	var batch []Event
	for i := 0; i < n; i++ {
		batch = append(batch, s.add(gameID, "game:test", map[string]int{"i": i}))
		if len(batch) == 3 || i == n-1 {
			h.Committed(batch)
			batch = nil
		}
	}
}

type received struct {
	seqs    []int
	resyncs int
}

// drain reads a connection's frames until want event seqs arrived.
func drain(t *testing.T, c *Conn, want int) received {
	t.Helper()
	var r received
	deadline := time.After(10 * time.Second)
	for len(r.seqs) < want {
		select {
		case f := <-c.Frames():
			var m struct {
				Type  string `json:"type"`
				Event string `json:"event"`
				Seq   int    `json:"seq"`
			}
			if err := json.Unmarshal(f, &m); err != nil {
				t.Fatalf("frame %s: %v", f, err)
			}
			switch m.Type {
			case "event":
				if m.Event == "game:spectators" {
					continue
				}
				r.seqs = append(r.seqs, m.Seq)
			case "resync":
				r.resyncs++
				return r
			}
		case <-deadline:
			t.Fatalf("got %d of %d events", len(r.seqs), want)
		}
	}
	return r
}

func wantSeqs(t *testing.T, who string, got []int, from, to int) {
	t.Helper()
	if len(got) != to-from+1 {
		t.Fatalf("%s got %d events, want %d..%d", who, len(got), from, to)
	}
	for i, seq := range got {
		if seq != from+i {
			t.Fatalf("%s got seq %d at %d, want %d..%d in order", who, seq, i, from, to)
		}
	}
}

func TestEventsReachEveryMemberOnceInOrderWhateverOrderTheyArriveIn(t *testing.T) {
	s := newMemStore()
	h := newTestHub(t, s)
	c := NewConn("u1", JSON)
	if err := h.Join(context.Background(), c, domain.GameStreamOf("g"), 0, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	e1, e2, e3 := s.add("g", "a", 1), s.add("g", "b", 2), s.add("g", "c", 3)
	// Two commits of one game, their hooks run out of order: the hub reads
	// what it lacks and delivers 1, 2, 3, then ignores the late one.
	h.Committed([]Event{e3})
	h.Committed([]Event{e1, e2})
	h.Announced(domain.GameStreamOf("g"), 3)
	wantSeqs(t, "the member", drain(t, c, 3).seqs, 1, 3)
	select {
	case f := <-c.Frames():
		t.Fatalf("an event came twice: %s", f)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestAJoinReplaysFromMemoryOrFromTheStore(t *testing.T) {
	s := newMemStore()
	h := newTestHub(t, s)
	ctx := context.Background()
	first := NewConn("u1", JSON)
	if err := h.Join(ctx, first, domain.GameStreamOf("g"), 0, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < ringLen+20; i += 37 {
		n := min(37, ringLen+20-i)
		publish(h, s, "g", n)
		wantSeqs(t, "the first member", drain(t, first, n).seqs, i+1, i+n)
	}

	reads := s.reads
	recent := NewConn("u2", JSON)
	joined := make(chan error, 1)
	go func() { joined <- h.Join(ctx, recent, domain.GameStreamOf("g"), 30, ringLen+20, false, 0) }()
	wantSeqs(t, "a resume the room remembers", drain(t, recent, ringLen-10).seqs, 31, ringLen+20)
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
	if s.reads != reads {
		t.Errorf("a resume within the room's memory read the store %d times", s.reads-reads)
	}
	old := NewConn("u3", JSON)
	go func() { joined <- h.Join(ctx, old, domain.GameStreamOf("g"), 5, ringLen+20, false, 0) }() // its socket's writer drains meanwhile
	wantSeqs(t, "an older resume", drain(t, old, ringLen+15).seqs, 6, ringLen+20)
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
	if n := h.membersOf("g"); n != 3 {
		t.Fatalf("the room has %d members, want 3", n)
	}
	publish(h, s, "g", 1)
	for i, c := range []*Conn{first, recent, old} {
		wantSeqs(t, fmt.Sprint("member ", i, " after the replays"), drain(t, c, 1).seqs, ringLen+21, ringLen+21)
	}
}

func TestASubscriberThatFallsBehindIsToldToResyncAndMissesNothing(t *testing.T) {
	s := newMemStore()
	h := newTestHub(t, s)
	ctx := context.Background()
	slow := NewConn("slow", JSON)
	if err := h.Join(ctx, slow, domain.GameStreamOf("g"), 0, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	// Nobody reads: the queue overflows at the sixth event. (Each batch is
	// a few events: a burst larger than a queue is caught up instead, see
	// TestABurstLargerThanAQueueReachesAMemberWithoutAResync.)
	for i := range queueLen - 5 {
		if !slow.deliver(fmt.Appendf(nil, `{"type":"filler","n":%d}`, i)) {
			t.Fatalf("filling the queue: frame %d not taken", i)
		}
	}
	reach := func(seq int) {
		deadline := time.Now().Add(5 * time.Second)
		for h.seqOf("g") < seq && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	publish(h, s, "g", 10)
	reach(10)
	publish(h, s, "g", queueLen+40)
	reach(queueLen + 50)
	got := drain(t, slow, 1<<30)
	if got.resyncs != 1 {
		t.Fatalf("a subscriber whose queue overflowed got %d resyncs, want 1", got.resyncs)
	}
	last := got.seqs[len(got.seqs)-1]
	wantSeqs(t, "the slow subscriber before its resync", got.seqs, 1, last)
	// It rejoins with its last seq and gets exactly the rest (its socket's
	// writer drains the queue meanwhile).
	joined := make(chan error, 1)
	go func() { joined <- h.Join(ctx, slow, domain.GameStreamOf("g"), last, s.last("g"), false, 0) }()
	wantSeqs(t, "the slow subscriber after rejoining", drain(t, slow, queueLen+50-last).seqs, last+1, queueLen+50)
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
}

// seqOf is the room's position, for tests.
func (h *Hub) seqOf(gameID string) int {
	h.mu.RLock()
	r := h.open[domain.GameStreamOf(gameID)]
	h.mu.RUnlock()
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

func TestSpectatorCountsGoOutBatched(t *testing.T) {
	s := newMemStore()
	h := New(s, testPages{s}, soloPresence{}, kinds(s, testPages{s}), "test", slog.New(slog.DiscardHandler),
		Options{CrowdEvery: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	player := NewConn("p", JSON)
	h.Join(ctx, player, domain.GameStreamOf("g"), 0, 0, true, 0)
	for i := 0; i < 100; i++ {
		h.Join(ctx, NewConn(fmt.Sprint("s", i), JSON), domain.GameStreamOf("g"), 0, 0, false, 0)
	}
	counts := 0
	deadline := time.After(time.Second)
	for done := false; !done; {
		select {
		case f := <-player.Frames():
			if !strings.Contains(string(f), `"game:spectators"`) {
				continue
			}
			counts++
			if !strings.Contains(string(f), `"count":100`) {
				t.Errorf("count frame %s, want 100 spectators", f)
			}
			if strings.Contains(string(f), `"seq"`) {
				t.Errorf("count frame %s has a seq: seqs number the game's events, and presence is none", f)
			}
		case <-deadline:
			done = true
		}
	}
	if counts != 1 {
		t.Fatalf("100 joins sent %d count frames to a member, want 1", counts)
	}
	if n := h.Spectators("g"); n != 100 {
		t.Fatalf("Spectators = %d, want 100 (players do not count)", n)
	}
}

// The stuck socket never reads: its writer blocks on a full TCP buffer,
// its queue overflows, and it is closed, while 100 sockets that read get
// every one of 1,000 events in order, none told to resync. The delivery
// latencies with and without it are logged, not asserted: they depend on
// how busy the machine is.
func TestAStuckSocketIsClosedWithoutSlowingTheOthers(t *testing.T) {
	alone := deliverToReaders(t, false)
	stuck := deliverToReaders(t, true)
	t.Logf("delivery to 100 readers of 1,000 events: p50 %v, p99 %v alone; p50 %v, p99 %v beside a stuck socket",
		alone[0], alone[1], stuck[0], stuck[1])
}

// deliverToReaders streams 1,000 events to 100 reading sockets (and a
// stuck one) and returns the p50 and p99 of the delivery latency.
func deliverToReaders(t *testing.T, withStuck bool) [2]time.Duration {
	s := newMemStore()
	h := newTestHub(t, s)
	h.writeWait = time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Serve(w, r, Client{UserID: r.URL.Query().Get("user")})
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	members := 100
	var stuck *websocket.Conn
	if withStuck {
		// A page's socket (large fragments) whose receive buffer is small,
		// so that its kernel stops taking bytes early.
		stuckDialer := websocket.Dialer{NetDialContext: smallBufferDial}
		var err error
		if stuck, _, err = stuckDialer.Dial(url+"?format=html&user=stuck", nil); err != nil {
			t.Fatal(err)
		}
		defer stuck.Close()
		joinGame(t, stuck, "g")
		members++
	}

	const events = 1000
	rs := newReaders(100, events)
	for i := range rs.results {
		ws, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("%s?user=r%d", url, i), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		joinGame(t, ws, "g")
		rs.read(t, i, ws)
	}
	rs.ready.Wait()
	for h.membersOf("g") < members {
		time.Sleep(time.Millisecond)
	}
	rs.stream(h, s, "g")
	rs.done.Wait()
	var all []time.Duration
	for i, r := range rs.results {
		if r.resyncs > 0 {
			t.Errorf("reader %d was told to resync %d times", i, r.resyncs)
		}
		wantSeqs(t, fmt.Sprint("reader ", i), r.seqs, 1, events)
		all = append(all, r.latencies...)
	}
	if withStuck {
		wantStuckClosed(t, h, stuck)
	}
	slices.Sort(all)
	return [2]time.Duration{all[len(all)/2], all[len(all)*99/100]}
}

// TestASocketClosedForFallingBehindIsAskedToComeBack: a page that stops
// reading is closed with 1013 (try again later), after which the page's
// socket reconnects and joins its rooms again from the seqs it shows; a
// policy violation (1008) would leave the page silent for good.
func TestASocketClosedForFallingBehindIsAskedToComeBack(t *testing.T) {
	s := newMemStore()
	h := newTestHub(t, s)
	h.writeWait = time.Second
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Serve(w, r, Client{UserID: r.URL.Query().Get("user")})
	}))
	defer srv.Close()
	dialer := websocket.Dialer{NetDialContext: smallBufferDial}
	slow, _, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"?format=html&user=slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	joinGame(t, slow, "g")
	for h.membersOf("g") < 1 {
		time.Sleep(time.Millisecond)
	}
	conn := h.userConns("slow")[0]
	for i := 0; !isDone(conn.Done()); i++ {
		if i == 10_000 {
			t.Fatal("a socket that reads nothing is still open after 10,000 events")
		}
		h.Committed([]Event{s.add("g", "game:test", map[string]int{"i": i})})
		time.Sleep(time.Millisecond)
	}
	slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := slow.ReadMessage()
		if err == nil {
			continue
		}
		var closed *websocket.CloseError
		if !errors.As(err, &closed) {
			t.Fatalf("the socket ended without a close frame: %v", err)
		}
		if closed.Code != websocket.CloseTryAgainLater {
			t.Errorf("closed with %d %q, want %d (try again later)", closed.Code, closed.Text, websocket.CloseTryAgainLater)
		}
		return
	}
}

func joinGame(t *testing.T, ws *websocket.Conn, gameID string) {
	t.Helper()
	if err := ws.WriteJSON(ClientMessage{Type: "join-game", GameID: gameID}); err != nil {
		t.Fatal(err)
	}
}

// readers are sockets that read a game's events, each until it has
// events of them, and time their delivery.
type readers struct {
	events   int
	results  []readerResult
	received []atomic.Int64 // events each reader has read
	failed   atomic.Bool    // a reader stopped before the end
	ready    sync.WaitGroup // each reader's join is answered
	done     sync.WaitGroup // each reader stopped
	sent     sync.Map       // seq -> when it was handed to the hub
}

type readerResult struct {
	seqs      []int
	resyncs   int
	latencies []time.Duration
}

func newReaders(n, events int) *readers {
	return &readers{events: events, results: make([]readerResult, n), received: make([]atomic.Int64, n)}
}

// read reads reader i's socket in a goroutine of its own.
func (rs *readers) read(t *testing.T, i int, ws *websocket.Conn) {
	rs.ready.Add(1)
	rs.done.Add(1)
	res := &rs.results[i]
	go func() {
		defer rs.done.Done()
		defer func() {
			if len(res.seqs) < rs.events {
				rs.failed.Store(true)
			}
		}()
		for len(res.seqs) < rs.events {
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			var m struct {
				Type  string `json:"type"`
				Event string `json:"event"`
				Seq   int    `json:"seq"`
			}
			if err := ws.ReadJSON(&m); err != nil {
				t.Errorf("reader %d: %v", i, err)
				return
			}
			switch {
			case m.Type == "joined":
				rs.ready.Done()
			case m.Event == "game:spectators": // presence, not a stored event
			case m.Type == "event":
				res.seqs = append(res.seqs, m.Seq)
				rs.received[i].Add(1)
				if at, ok := rs.sent.Load(m.Seq); ok {
					res.latencies = append(res.latencies, time.Since(at.(time.Time)))
				}
			case m.Type == "resync":
				res.resyncs++
			}
		}
	}()
}

// stream commits the readers' events one by one: a stream (up to 500
// events a second in one room), not one burst, that runs at most
// inFlight events ahead of the slowest reader. A reader's queue then
// never holds enough to count as falling behind, however busy the
// machine (a test run beside others starved the writers for the 100 ms
// the queue holds at this rate).
func (rs *readers) stream(h *Hub, s *memStore, gameID string) {
	const inFlight = queueLen * 2 / 3
	for i := 0; i < rs.events && !rs.failed.Load(); i++ {
		for r := range rs.received {
			for int64(i)-rs.received[r].Load() > inFlight && !rs.failed.Load() {
				time.Sleep(time.Millisecond)
			}
		}
		e := s.add(gameID, "game:test", map[string]int{"i": i})
		rs.sent.Store(e.Seq, time.Now())
		h.Committed([]Event{e})
		time.Sleep(2 * time.Millisecond)
	}
}

// wantStuckClosed checks that the stuck socket was closed: reading it
// ends once its buffered frames are read, and the hub let it go.
func wantStuckClosed(t *testing.T, h *Hub, stuck *websocket.Conn) {
	t.Helper()
	stuck.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := stuck.ReadMessage(); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the stuck socket is still open: %v", err)
			}
			break
		}
	}
	for deadline := time.Now().Add(5 * time.Second); h.connsOf("stuck") != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the stuck socket is still registered")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// smallBufferDial connects with a 4 KB receive buffer.
func smallBufferDial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	return d.DialContext(ctx, network, addr)
}

// joinedSockets opens n sockets of users s0, s1, ... to the hub served at
// url and sends each a join-game of gameID; they are closed when the test
// ends.
func joinedSockets(t *testing.T, url string, n int, gameID string) []*websocket.Conn {
	t.Helper()
	clients := make([]*websocket.Conn, n)
	for i := range clients {
		ws, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("%s?user=s%d", url, i), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		if err := ws.WriteJSON(ClientMessage{Type: "join-game", GameID: gameID}); err != nil {
			t.Fatal(err)
		}
		clients[i] = ws
	}
	return clients
}

func (h *Hub) membersOf(gameID string) int {
	h.mu.RLock()
	r := h.open[domain.GameStreamOf(gameID)]
	h.mu.RUnlock()
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.members)
}

func (h *Hub) userConns(userID string) []*Conn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*Conn
	if u := h.users[userID]; u != nil {
		for c := range u.conns {
			out = append(out, c)
		}
	}
	return out
}

func (h *Hub) connsOf(userID string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if u := h.users[userID]; u != nil {
		return len(u.conns)
	}
	return 0
}

func TestAUserWhoClosesSocketsCannotOpenFreshOnesFasterThanThePace(t *testing.T) {
	h := newTestHub(t, newMemStore())
	for i := range MaxSocketsPerUser {
		if err := h.admit("u1"); err != nil {
			t.Fatalf("opening %d: %v", i+1, err)
		}
	}
	// Nothing is held (the sockets closed), yet the next opening waits for
	// the pace; another user is not affected.
	if err := h.admit("u1"); err != errSocketsTooFast {
		t.Fatalf("opening %d at once: %v, want %v", MaxSocketsPerUser+1, err, errSocketsTooFast)
	}
	if err := h.admit("u2"); err != nil {
		t.Fatalf("another user's opening: %v", err)
	}
	// The entry outlives the sockets while the pace is not back to full.
	h.sweep(context.Background())
	if err := h.admit("u1"); err != errSocketsTooFast {
		t.Fatalf("after a sweep: %v, want %v", err, errSocketsTooFast)
	}
}

func TestNoticesReachAPISocketsAsFramesAndPagesAsWhatPagesRender(t *testing.T) {
	h := newTestHub(t, newMemStore())
	api, page, other := NewConn("u1", JSON), NewConn("u1", HTML), NewConn("u2", HTML)
	for _, c := range []*Conn{api, page, other} {
		if !h.Register(c) {
			t.Fatal("register a socket")
		}
	}
	next := func(c *Conn, who string) string {
		t.Helper()
		select {
		case f := <-c.Frames():
			return string(f)
		case <-time.After(time.Second):
			t.Fatalf("%s got nothing", who)
			return ""
		}
	}
	nothing := func(c *Conn, who string) {
		t.Helper()
		select {
		case f := <-c.Frames():
			t.Fatalf("%s got %s, want nothing", who, f)
		case <-time.After(50 * time.Millisecond):
		}
	}

	// A notice pages show nothing of reaches API sockets only.
	h.Notify("u1", "chat:dm", json.RawMessage(`{"text":"hi"}`))
	if got, want := next(api, "the API socket"), `{"type":"notice","notice":"chat:dm","data":{"text":"hi"}}`; got != want {
		t.Errorf("the API socket got %s, want %s", got, want)
	}
	nothing(page, "the page")

	// A balance reaches both, each in its form, and nobody else.
	h.Notify("u1", "balance", json.RawMessage(`{"availableMinor":5}`))
	if got, want := next(api, "the API socket"), `{"type":"notice","notice":"balance","data":{"availableMinor":5}}`; got != want {
		t.Errorf("the API socket got %s, want %s", got, want)
	}
	if got, want := next(page, "the page"), `<div id="balance">{"availableMinor":5}</div>`; got != want {
		t.Errorf("the page got %s, want %s", got, want)
	}
	nothing(other, "another user's page")
}

// TestNoticesToEveryoneAreSpreadOutAndBoundedInFrames steers the hub's
// clock: a notice to as many sockets as FeedFramesPerSecond goes out in
// chunks with a pause between them, the next one in the same second is
// refused although BroadcastsPerSecond would allow it, and a second later
// one goes out again; to few sockets, no more than BroadcastsPerSecond go
// out a second.
func TestNoticesToEveryoneAreSpreadOutAndBoundedInFrames(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var (
		mu     sync.Mutex
		pauses []time.Duration
	)
	s := newMemStore()
	h := New(s, testPages{s}, soloPresence{}, kinds(s, testPages{s}), "test", slog.New(slog.DiscardHandler), Options{
		Clock: func() time.Time { return now },
		Pause: func(_ context.Context, d time.Duration) bool {
			mu.Lock()
			pauses = append(pauses, d)
			mu.Unlock()
			return true
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	conns := make([]*Conn, FeedFramesPerSecond)
	for i := range conns {
		conns[i] = NewConn(fmt.Sprintf("u%d", i/MaxSocketsPerUser), JSON)
		if !h.Register(conns[i]) {
			t.Fatal("register a socket")
		}
	}
	// has reports whether a socket holds a frame now, without waiting.
	has := func(c *Conn) bool {
		select {
		case <-c.Frames():
			return true
		default:
			return false
		}
	}

	done := make(chan struct{})
	if !h.broadcast("activity", json.RawMessage(`{"id":1}`), done) {
		t.Fatal("the first notice to everyone was refused")
	}
	<-done
	for i, c := range conns {
		if !has(c) {
			t.Fatalf("socket %d of %d got no notice to everyone", i, len(conns))
		}
	}
	chunks := (len(conns) + broadcastChunk - 1) / broadcastChunk
	mu.Lock()
	got := slices.Clone(pauses)
	mu.Unlock()
	if len(got) != chunks-1 || slices.ContainsFunc(got, func(d time.Duration) bool { return d != broadcastPause }) {
		t.Errorf("the delivery paused %v, want %d pauses of %v between %d chunks", got, chunks-1, broadcastPause, chunks)
	}

	// The next notice would make as many frames again within the same
	// second: it is refused, although it is within BroadcastsPerSecond.
	now = now.Add(100 * time.Millisecond)
	if h.broadcast("activity", json.RawMessage(`{"id":2}`), nil) {
		t.Fatalf("a second notice to %d sockets within a second went out", len(conns))
	}
	if has(conns[0]) {
		t.Fatal("a refused notice reached a socket")
	}

	// A second later the frames are there again.
	now = now.Add(time.Second)
	done = make(chan struct{})
	if !h.broadcast("activity", json.RawMessage(`{"id":3}`), done) {
		t.Fatal("a notice a second later was refused")
	}
	<-done
	if !has(conns[len(conns)-1]) {
		t.Fatal("the notice a second later did not reach the last socket")
	}

	// With few sockets, the notices are bounded by BroadcastsPerSecond.
	for _, c := range conns[MaxSocketsPerUser:] {
		h.Unregister(c)
	}
	for _, c := range conns[:MaxSocketsPerUser] {
		has(c)
	}
	now = now.Add(time.Second)
	sent := 0
	for range 3 * BroadcastsPerSecond {
		if h.broadcast("activity", json.RawMessage(`{"id":4}`), nil) {
			sent++
		}
	}
	if sent != BroadcastsPerSecond {
		t.Fatalf("%d notices to %d sockets went out at once, want %d", sent, MaxSocketsPerUser, BroadcastsPerSecond)
	}
}

// TestANoticeToEveryoneGoesOutWithASocketsNextFrame: a notice to
// everyone is queued on every socket at once, while the writers are woken
// for it a chunk of sockets at a time (those of a chunk whose turn has not
// come hold it unwritten). A socket whose chunk has not had
// its turn yet, but that gets a game's event meanwhile, receives the
// notice in front of the event (in the same write) instead of in a write
// of its own after the pause; when its chunk's turn comes, nothing more is
// sent to it.
func TestANoticeToEveryoneGoesOutWithASocketsNextFrame(t *testing.T) {
	s := newMemStore()
	paused, turn := make(chan struct{}, 1), make(chan struct{})
	h := New(s, testPages{s}, soloPresence{}, kinds(s, testPages{s}), "test", slog.New(slog.DiscardHandler), Options{
		Pause: func(context.Context, time.Duration) bool { paused <- struct{}{}; <-turn; return true },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Serve(w, r, Client{UserID: r.URL.Query().Get("user")})
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	type frame struct{ Type, Event, Notice string }
	clients := joinedSockets(t, url, broadcastChunk+10, "g") // two chunks
	for i, ws := range clients {
		var f frame
		if err := ws.ReadJSON(&f); err != nil || f.Type != "joined" {
			t.Fatalf("socket %d: the join answered %+v, %v", i, f, err)
		}
	}

	done := make(chan struct{})
	if !h.broadcast("activity", json.RawMessage(`{"id":1}`), done) {
		t.Fatal("the notice to everyone was refused")
	}
	<-paused // the first chunk's turn is over; the second's waits
	// Its sockets hold the notice, and the writers were not woken for
	// them: the notice is not written to ten thousand sockets at once.
	waiting := func() (n int) {
		h.mu.RLock()
		defer h.mu.RUnlock()
		for _, u := range h.users {
			for c := range u.conns {
				if len(c.send) > 0 && !c.sock.queued.Load() {
					n++
				}
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); waiting() != len(clients)-broadcastChunk; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets hold the notice unwritten while the second chunk waits, want its %d",
				waiting(), len(clients)-broadcastChunk)
		}
	}
	publish(h, s, "g", 1)
	for i, ws := range clients {
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		notices := 0
		for {
			var f frame
			if err := ws.ReadJSON(&f); err != nil {
				t.Fatalf("socket %d: %v", i, err)
			}
			if f.Type == "notice" && f.Notice == "activity" {
				notices++
			}
			if f.Type == "event" && f.Event == "game:test" {
				break
			}
		}
		if notices != 1 {
			t.Fatalf("socket %d read %d notices to everyone before the game's event, want 1 "+
				"(the second chunk's turn has not come yet)", i, notices)
		}
	}
	close(turn)
	<-done
	// Nothing is left to send: a socket's turn wrote nothing again.
	deadline := time.Now().Add(100 * time.Millisecond)
	for i, ws := range clients {
		ws.SetReadDeadline(deadline)
		var f frame
		if err := ws.ReadJSON(&f); err == nil && f.Event != "game:spectators" {
			t.Fatalf("socket %d read %+v after the notice and the event", i, f)
		}
	}
}

// TestJoinAndResumeFramesApplyInOrder: a fresh join answers joined with
// the seq of its state and then only later events; a join with a lastSeq
// the store can replay answers resumed with that seq and then exactly the
// missing events; a lastSeq the room never reached answers joined. No
// event at or below the seq of joined or resumed ever follows it.
func TestJoinAndResumeFramesApplyInOrder(t *testing.T) {
	s := newMemStore()
	h := newTestHub(t, s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Serve(w, r, Client{UserID: r.URL.Query().Get("user")})
	}))
	defer srv.Close()
	publish(h, s, "g", 10)

	type frame struct {
		Type  string `json:"type"`
		Event string `json:"event"`
		Seq   *int   `json:"seq"`
	}
	// session joins with lastSeq and returns the first frame and the seqs
	// of the events that follow it until want arrived.
	session := func(user string, lastSeq, want int) (frame, []int) {
		ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"?user="+user, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if err := ws.WriteJSON(ClientMessage{Type: "join-game", GameID: "g", LastSeq: lastSeq}); err != nil {
			t.Fatal(err)
		}
		var first frame
		var seqs []int
		for first.Type == "" || len(seqs) < want {
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			var f frame
			if err := ws.ReadJSON(&f); err != nil {
				t.Fatalf("%s: %v after %v", user, err, seqs)
			}
			switch {
			case first.Type == "":
				first = f
			case f.Type == "event" && f.Event != "game:spectators":
				seqs = append(seqs, *f.Seq)
			}
		}
		return first, seqs
	}
	upTo := func(from, to int) []int {
		var out []int
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}

	go func() { // events keep coming while the sockets join
		for i := 0; i < 3; i++ {
			time.Sleep(20 * time.Millisecond)
			publish(h, s, "g", 1)
		}
	}()
	if f, seqs := session("fresh", 0, 0); f.Type != "joined" || f.Seq == nil || *f.Seq < 10 {
		t.Errorf("a fresh join: first frame %+v, want joined with seq >= 10 (then %v)", f, seqs)
	}
	time.Sleep(100 * time.Millisecond)
	if f, seqs := session("resume", 4, 9); f.Type != "resumed" || f.Seq == nil || *f.Seq != 4 || !slices.Equal(seqs, upTo(5, 13)) {
		t.Errorf("a resume after 4: %s %v then %v, want resumed 4 then 5..13", f.Type, f.Seq, seqs)
	}
	if f, _ := session("ahead", 99, 0); f.Type != "joined" || f.Seq == nil || *f.Seq != 13 {
		t.Errorf("a resume after a seq the room never reached: %+v, want joined at 13", f)
	}
	// A fresh join while events arrive: every event after joined's seq,
	// none at or below it.
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"?user=racer", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteJSON(ClientMessage{Type: "join-game", GameID: "g"})
	publish(h, s, "g", 5)
	var joinedAt int
	var seqs []int
	for joinedAt < 18 && (len(seqs) == 0 || seqs[len(seqs)-1] < 18) {
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var f frame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Type == "joined":
			joinedAt = *f.Seq
		case f.Type == "event" && f.Event != "game:spectators":
			if *f.Seq <= joinedAt {
				t.Errorf("event %d after joined at %d", *f.Seq, joinedAt)
			}
			seqs = append(seqs, *f.Seq)
		}
	}
	if want := upTo(joinedAt+1, 18); !slices.Equal(seqs, want) {
		t.Errorf("after joined at %d: %v, want %v", joinedAt, seqs, want)
	}
}

// gatedPages is testPages whose states render pages only when let through
// (each Events call takes one from release), and counts the reads.
type gatedPages struct {
	testPages
	release chan struct{}
	opens   atomic.Int32
	refuse  atomic.Bool // the next states cannot follow the game
}

func (p *gatedPages) Open(ctx context.Context, gameID string) (PageState, error) {
	p.opens.Add(1)
	v, _ := p.testPages.Open(ctx, gameID)
	return &gatedState{testPageState: v.(*testPageState), pages: p}, nil
}

type gatedState struct {
	*testPageState
	pages *gatedPages
}

func (v *gatedState) Events(evs []Event) ([][]byte, bool) {
	if v.pages.release != nil {
		<-v.pages.release
	}
	if v.pages.refuse.Load() {
		return nil, false
	}
	return v.testPageState.Events(evs)
}

// TestAPISocketsGetEventsBeforePagesAreRendered: while a room's pages are
// being rendered, its API sockets already have the event.
func TestAPISocketsGetEventsBeforePagesAreRendered(t *testing.T) {
	s := newMemStore()
	pages := &gatedPages{testPages: testPages{s}, release: make(chan struct{})}
	h := New(s, pages, soloPresence{}, kinds(s, pages), "test", slog.New(slog.DiscardHandler), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	api, page := NewConn("u1", JSON), NewConn("u2", HTML)
	for _, c := range []*Conn{api, page} {
		if err := h.Join(ctx, c, domain.GameStreamOf("g"), 0, 0, false, 0); err != nil {
			t.Fatal(err)
		}
	}
	publish(h, s, "g", 1)
	wantSeqs(t, "the API socket, while the page waits for its rendering", drain(t, api, 1).seqs, 1, 1)
	select {
	case f := <-page.Frames():
		t.Fatalf("the page got %.40s before its rendering", f)
	default:
	}
	close(pages.release)
	select {
	case f := <-page.Frames():
		if !strings.Contains(string(f), `data-seq="1"`) {
			t.Fatalf("the page got %.60s, want event 1", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the page got nothing once rendered")
	}
}

// TestARoomReadsWhatPagesShowOnceAndThenFollowsTheEvents: the first page
// of a room reads the page state; further pages and events read nothing;
// a state that cannot follow the events is dropped, its pages told to
// resync, and read again when they rejoin; a room without pages keeps
// none.
func TestARoomReadsWhatPagesShowOnceAndThenFollowsTheEvents(t *testing.T) {
	s := newMemStore()
	pages := &gatedPages{testPages: testPages{s}}
	h := New(s, pages, soloPresence{}, kinds(s, pages), "test", slog.New(slog.DiscardHandler), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	publish(h, s, "g", 3)
	p1, p2 := NewConn("u1", HTML), NewConn("u2", HTML)
	for _, c := range []*Conn{p1, p2} {
		if err := h.Join(ctx, c, domain.GameStreamOf("g"), 3, 3, false, 0); err != nil {
			t.Fatal(err)
		}
	}
	publish(h, s, "g", 10)
	for i, c := range []*Conn{p1, p2} {
		for seq := 4; seq <= 13; seq++ {
			select {
			case f := <-c.Frames():
				if !strings.Contains(string(f), fmt.Sprintf(`data-seq="%d"`, seq)) {
					t.Fatalf("page %d got %.40s, want event %d", i, f, seq)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("page %d did not get event %d", i, seq)
			}
		}
	}
	if n := pages.opens.Load(); n != 1 {
		t.Fatalf("two pages and ten events read the page state %d times, want 1", n)
	}

	pages.refuse.Store(true)
	publish(h, s, "g", 1)
	for i, c := range []*Conn{p1, p2} {
		if got := drain(t, c, 1); got.resyncs != 1 {
			t.Fatalf("page %d of a state that could not follow got %+v, want a resync", i, got)
		}
	}
	pages.refuse.Store(false)
	if err := h.Join(ctx, p1, domain.GameStreamOf("g"), 13, 14, false, 0); err != nil {
		t.Fatal(err)
	}
	if n := pages.opens.Load(); n != 2 {
		t.Fatalf("the page state was read %d times after a rejoin, want 2", n)
	}
	h.Leave(p1, domain.GameStreamOf("g"))
	if n := h.membersOf("g"); n != 0 {
		t.Fatalf("the room has %d members, want none", n)
	}
	api := NewConn("u3", JSON)
	if err := h.Join(ctx, api, domain.GameStreamOf("g"), 14, 14, false, 0); err != nil {
		t.Fatal(err)
	}
	if n := pages.opens.Load(); n != 2 {
		t.Fatalf("an API socket read the page state (%d reads)", n)
	}
}

// TestSocketsTakeNoWriterGoroutineOfTheirOwn: each socket costs one
// goroutine (its reader) however many frames it gets; a few writers send
// to all of them.
func TestSocketsTakeNoWriterGoroutineOfTheirOwn(t *testing.T) {
	s := newMemStore()
	h := newTestHub(t, s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Serve(w, r, Client{UserID: r.URL.Query().Get("user")})
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	const sockets = 200
	before := runtime.NumGoroutine()
	clients := joinedSockets(t, url, sockets, "g")
	for h.membersOf("g") < sockets {
		time.Sleep(time.Millisecond)
	}
	publish(h, s, "g", 5)
	for i, ws := range clients {
		for seen := 0; seen < 5; {
			ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			var m struct {
				Type, Event string
			}
			if err := ws.ReadJSON(&m); err != nil {
				t.Fatalf("socket %d: %v", i, err)
			}
			if m.Type == "event" && m.Event == "game:test" {
				seen++
			}
		}
	}
	if grew := runtime.NumGoroutine() - before; grew > sockets+numWriters()+10 {
		t.Fatalf("%d sockets that got 5 events each took %d goroutines, want about one each", sockets, grew)
	}
}

// A room whose last member was taken out for falling behind (a kick,
// which cannot close the room) is closed by the next sweep instead of
// being checked against the store for ever; a later join opens a new
// room and gets the events.
func TestASweepClosesARoomItsLastMemberFellBehindIn(t *testing.T) {
	s := newMemStore()
	h := New(s, testPages{s}, soloPresence{}, kinds(s, testPages{s}), "test", slog.New(slog.DiscardHandler), Options{})
	ctx := context.Background()
	slow := NewConn("slow", JSON)
	if err := h.Join(ctx, slow, domain.GameStreamOf("g"), 0, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	for i := range queueLen { // nobody reads: the queue is full, and the next event kicks the only member
		if !slow.deliver(fmt.Appendf(nil, `{"type":"filler","n":%d}`, i)) {
			t.Fatalf("filling the queue: frame %d not taken", i)
		}
	}
	publish(h, s, "g", 10)
	deadline := time.Now().Add(5 * time.Second)
	for h.seqOf("g") < 10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := drain(t, slow, 1<<30); got.resyncs != 1 {
		t.Fatalf("the member got %d resyncs, want 1", got.resyncs)
	}
	h.mu.RLock()
	_, open := h.open[domain.GameStreamOf("g")]
	h.mu.RUnlock()
	if !open {
		t.Fatal("the room closed on the kick alone: this test would prove nothing")
	}

	h.sweep(ctx)
	h.mu.RLock()
	_, open = h.open[domain.GameStreamOf("g")]
	h.mu.RUnlock()
	if open {
		t.Fatal("a room without members is still open after a sweep")
	}
	late := NewConn("late", JSON)
	if err := h.Join(ctx, late, domain.GameStreamOf("g"), 0, s.last("g"), false, 0); err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, "a join after the sweep", drain(t, late, 10).seqs, 1, 10)
}
