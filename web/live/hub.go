// Package live is the WebSocket layer: the hub that keeps one instance's
// rooms and users' sockets, and the socket protocol (join, leave, resume
// by seq, resync, personal notices, spectator counts).
//
// Every kind of room (games, tournaments: domain.StreamKind) is the same
// room (rooms.go): one registry, one pump, join, replay and sweep. A kind
// brings only how a join is answered and how its pages render its events
// (Kind), and its frames on the wire (wires, in frames.go).
//
// It is fed events and told little, through the small interfaces below,
// and it never waits on a database inside a fan-out: each room renders a
// batch of events once per audience (JSON envelopes once, and handed to
// the API sockets before anything else; the browser pages' HTML once, from
// the page state the room keeps in memory) outside its lock, then queues
// the same bytes for every subscriber. A subscriber whose queue is full is
// taken out of the room and told to resync; one that cannot even take that
// is closed. A few writers send the queued frames to the network, socket
// after socket. Nothing here imports the database packages.
package live

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"wager/domain"
)

// Pages renders what browser pages receive besides rooms' events.
type Pages interface {
	// Crowd renders a spectator count.
	Crowd(count int) []byte
	// Notice renders a personal notice for the user's pages (a new
	// balance for the header); nil when pages show nothing of it.
	Notice(kind domain.NoticeKind, data json.RawMessage) []byte
}

// Presence shares spectator counts and who is online between instances.
type Presence interface {
	Publish(ctx context.Context, instance string, counts map[string]int) error
	Others(ctx context.Context, instance string) (map[string]int, error)
	// SetOnline records the users who opened their first socket here
	// (online) or closed their last (offline) since the last call; with
	// full, online is every user with a socket here and nobody else is.
	SetOnline(ctx context.Context, instance string, online, offline []string, full bool) error
	// SetRooms records who holds a socket in which room here, as
	// SetOnline records who is online: the members who joined and left
	// since the last call, or with full every member here. An arena pairs
	// only its entrants in a room (domain/tournament).
	SetRooms(ctx context.Context, instance string, joined, left []domain.RoomMember, full bool) error
}

// Everyone is the user id of a notice to every socket.
const Everyone = ""

// FeedFramesPerSecond bounds the frames that notices to Everyone make on
// an instance, a frame per socket that takes one, and BroadcastsPerSecond
// the notices themselves: a notice costs at least a BroadcastsPerSecond-th
// of a second's frames. With thousands of sockets open fewer notices go
// out, so that the public feed never costs more than a fraction of what
// the instance writes for the games themselves.
const (
	BroadcastsPerSecond = 5
	FeedFramesPerSecond = 10_000
	minBroadcastFrames  = FeedFramesPerSecond / BroadcastsPerSecond
)

// A notice to Everyone is queued on every socket at once and written
// broadcastChunk sockets at a time, broadcastPause apart: ten thousand
// sockets take it within a second, without ten thousand writes queued at
// once ahead of the games' events, and a socket that writes something
// else before its turn carries the notice along in that write.
const (
	broadcastChunk = 250
	broadcastPause = 25 * time.Millisecond
)

// onlineFullEvery is how often the whole set of users online here is
// written again, repairing what a failed write of changes left wrong.
const onlineFullEvery = 30 * time.Second

// Options are the hub's timings; zero values take the defaults.
type Options struct {
	CrowdEvery    time.Duration // spectator counts go out at most this often per room (500ms)
	PresenceEvery time.Duration // counts are shared with other instances this often (1s)
	SweepEvery    time.Duration // rooms of games and tournaments check the database for events they were not told of (2s)
	// Clock is the time the frames of notices to Everyone are counted in,
	// and Pause how their delivery waits between chunks of sockets, false
	// when ctx ended first: the wall clock and sleep unless a test steers
	// them.
	Clock domain.Clock
	Pause func(ctx context.Context, d time.Duration) bool
	// Now is the clock the events' times are read on (the application's):
	// a late spectator gets an event Joined.Delay after its time. The
	// wall clock unless set.
	Now domain.Clock
}

// Hub is one instance's live rooms and sockets.
type Hub struct {
	store    Store
	pages    Pages
	presence Presence
	kinds    map[domain.StreamKind]Kind
	instance string
	log      *slog.Logger
	opts     Options

	ctx       context.Context // the pumps' context, cancelled as Run stops
	stop      context.CancelFunc
	writeWait time.Duration // how long a socket write may block before the socket is closed

	// The rooms' pumps, which Run waits for; none starts once stopped.
	pumpsMu sync.Mutex
	pumps   sync.WaitGroup
	stopped bool

	sweepNow chan struct{} // asks Run for a sweep at once

	mu     sync.RWMutex
	open   map[domain.Stream]*room
	latest map[domain.Stream]heard // newest seq heard of per room, for rooms opened later
	users  map[string]*userSockets

	remote atomic.Pointer[map[string]int] // other instances' spectator counts

	// Users whose first socket opened or last closed since presence was
	// last shared, and when the full set was last written; under mu.
	changed map[string]struct{}
	fullAt  time.Time

	// The room members last shared (see members), and when all of them
	// were last written; Run's alone.
	shared      map[domain.RoomMember]struct{}
	sharedAllAt time.Time

	feedFrames *rate.Limiter     // of notices to Everyone
	feeds      atomic.Int64      // registered sockets that take notices to Everyone
	feed       chan feedDelivery // notices to Everyone that Run delivers
	writers    *writers          // send the sockets' queued frames
}

type heard struct {
	seq int
	at  time.Time
}

// New returns a hub whose rooms of each kind are answered and rendered as
// kinds says, and read from store; Run starts its background work.
func New(store Store, pages Pages, presence Presence, kinds map[domain.StreamKind]Kind, instance string, log *slog.Logger,
	opts Options) *Hub {
	if opts.CrowdEvery == 0 {
		opts.CrowdEvery = 500 * time.Millisecond
	}
	if opts.PresenceEvery == 0 {
		opts.PresenceEvery = time.Second
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = 2 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = domain.SystemClock
	}
	if opts.Now == nil {
		opts.Now = domain.SystemClock
	}
	if opts.Pause == nil {
		opts.Pause = domain.Sleep
	}
	ctx, stop := context.WithCancel(context.Background())
	h := &Hub{store: store, pages: pages, presence: presence, kinds: kinds, instance: instance, log: log, opts: opts,
		ctx: ctx, stop: stop, writeWait: writeWait, open: map[domain.Stream]*room{}, latest: map[domain.Stream]heard{},
		users:    map[string]*userSockets{},
		sweepNow: make(chan struct{}, 1), changed: map[string]struct{}{},
		feedFrames: rate.NewLimiter(FeedFramesPerSecond, FeedFramesPerSecond),
		feed:       make(chan feedDelivery, 2*BroadcastsPerSecond), writers: newWriters()}
	h.remote.Store(&map[string]int{})
	return h
}

// Run does the hub's work until ctx is done: the writers that send the
// sockets' frames, the delivery of notices to Everyone, and the periodic
// work: spectator counts, sharing them with other instances, and the
// check for missed events (sweep). It returns once its goroutines and
// the rooms' pumps ended. A hub runs once: a pump that would start after
// Run began to stop does not start, so its room sends nothing more.
func (h *Hub) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range numWriters() {
		wg.Go(h.writers.run)
	}
	wg.Go(func() { h.deliverFeed(ctx) })
	defer wg.Wait()
	defer h.writers.close()
	defer h.stopPumps() // before the writers stop: the pumps' last frames go out
	crowd := time.NewTicker(h.opts.CrowdEvery)
	presence := time.NewTicker(h.opts.PresenceEvery)
	sweep := time.NewTicker(h.opts.SweepEvery)
	defer crowd.Stop()
	defer presence.Stop()
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-crowd.C:
			h.sendCounts()
		case <-presence.C:
			h.sharePresence(ctx)
		case <-sweep.C:
			h.sweep(ctx)
		case <-h.sweepNow:
			h.sweep(ctx)
		}
	}
}

// goPump runs pump as one of the rooms' pumps, which Run waits for; once
// Run began to stop it runs nothing (the room stays marked as pumping:
// a stopped hub sends nothing more).
func (h *Hub) goPump(pump func()) {
	h.pumpsMu.Lock()
	defer h.pumpsMu.Unlock()
	if !h.stopped {
		h.pumps.Go(pump)
	}
}

// stopPumps lets no pump start any more, ends the running ones at their
// next read (or backoff) and waits for them.
func (h *Hub) stopPumps() {
	h.pumpsMu.Lock()
	h.stopped = true
	h.pumpsMu.Unlock()
	h.stop()
	h.pumps.Wait()
}

// userSockets are one user's sockets here and the pace at which the user
// opens them. The entry outlives the sockets until that pace is back to
// its full burst, so that closing every socket does not reset it.
type userSockets struct {
	conns map[*Conn]struct{}
	opens *rate.Limiter
}

// admit takes one of the user's socket openings: RATE_LIMITED when the
// user holds MaxSocketsPerUser sockets here, or opened them faster than
// SocketOpensPerSecond.
func (h *Hub) admit(userID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.userLocked(userID)
	if len(u.conns) >= MaxSocketsPerUser {
		return errTooManySockets
	}
	if !u.opens.Allow() {
		return errSocketsTooFast
	}
	return nil
}

// Register adds a connection to its user's personal channel; false when
// the user already holds MaxSocketsPerUser sockets here.
func (h *Hub) Register(c *Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.userLocked(c.UserID)
	if len(u.conns) >= MaxSocketsPerUser {
		return false
	}
	u.conns[c] = struct{}{}
	if len(u.conns) == 1 {
		h.changed[c.UserID] = struct{}{}
	}
	if c.takesFeed() {
		h.feeds.Add(1)
	}
	return true
}

// userLocked returns the user's entry, made when missing; h.mu is held.
func (h *Hub) userLocked(userID string) *userSockets {
	u := h.users[userID]
	if u == nil {
		u = &userSockets{conns: map[*Conn]struct{}{}, opens: rate.NewLimiter(SocketOpensPerSecond, MaxSocketsPerUser)}
		h.users[userID] = u
	}
	return u
}

// Unregister closes a connection and takes it out of its rooms and its
// user's channel.
func (h *Hub) Unregister(c *Conn) {
	c.Close()
	for _, r := range c.leaveAll() {
		r.leave(h, c)
	}
	h.mu.Lock()
	if u := h.users[c.UserID]; u != nil {
		if _, ok := u.conns[c]; ok {
			if len(u.conns) == 1 {
				h.changed[c.UserID] = struct{}{}
			}
			if c.takesFeed() {
				h.feeds.Add(-1)
			}
			delete(u.conns, c)
		}
	}
	h.mu.Unlock()
}

// Notify delivers a personal notice to the user's sockets on this
// instance: API sockets get the notice frame, page sockets what Pages
// renders of it (nothing when it renders nothing). A socket too far behind
// to take it is closed (its client reconnects and reads the facts through
// the API, or reloads the page).
//
// A notice to Everyone goes to every socket here: API sockets, and the
// page sockets that follow the public feed (Conn.Feed). Those are the
// activity feed's entries, pushed within FeedFramesPerSecond and
// BroadcastsPerSecond (the feed's endpoint has every one): a busy
// evening's thousands of finishing games must not become millions of
// frames. Run delivers them, a chunk of sockets at a time.
func (h *Hub) Notify(userID string, kind domain.NoticeKind, data json.RawMessage) {
	if userID == Everyone {
		h.broadcast(kind, data, nil)
		return
	}
	h.mu.RLock()
	var conns []*Conn
	if u := h.users[userID]; u != nil {
		conns = make([]*Conn, 0, len(u.conns))
		for c := range u.conns {
			conns = append(conns, c)
		}
	}
	h.mu.RUnlock()
	if len(conns) > 0 {
		h.noticeFrames(kind, data, conns).deliver(conns)
	}
}

// feedDelivery is a notice to Everyone on its way: its frames, the
// sockets that take it, and what to close once they all have it (nil:
// nothing).
type feedDelivery struct {
	frames noticeFrames
	conns  []*Conn
	done   chan<- struct{}
}

// broadcast queues a notice to Everyone for Run to deliver, unless its
// frames would pass FeedFramesPerSecond: it costs a frame per socket that
// takes it, and at least minBroadcastFrames. Past the rate the sockets are
// not even gathered (counted by feeds instead: a burst of finishing games
// must not walk ten thousand sockets for each notice it drops). It
// reports whether the notice goes out; done (may be nil) is closed once
// every socket has it.
func (h *Hub) broadcast(kind domain.NoticeKind, data json.RawMessage, done chan<- struct{}) bool {
	n := int(h.feeds.Load())
	if n == 0 || !h.feedFrames.AllowN(h.opts.Clock(), min(max(n, minBroadcastFrames), FeedFramesPerSecond)) {
		return false
	}
	conns := h.feedConns()
	select {
	case h.feed <- feedDelivery{frames: h.noticeFrames(kind, data, conns), conns: conns, done: done}:
		return true
	default: // the rate keeps the queue short; a notice past it is dropped like one past the rate
		return false
	}
}

// deliverFeed delivers the notices to Everyone, one after the other,
// until ctx is done: each is queued on every socket at once, and the
// writers are woken for it broadcastChunk sockets at a time,
// broadcastPause apart.
func (h *Hub) deliverFeed(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-h.feed:
			// A socket sent something else before its chunk's turn (a
			// game's events, an answer) carries the notice in that write.
			d.frames.queue(d.conns)
			for conns := d.conns; len(conns) > 0; {
				n := min(len(conns), broadcastChunk)
				for _, c := range conns[:n] {
					c.wakeIfWaiting()
				}
				if conns = conns[n:]; len(conns) > 0 && !h.opts.Pause(ctx, broadcastPause) {
					return // the hub stops, and its writers with it
				}
			}
			if d.done != nil {
				close(d.done)
			}
		}
	}
}

// takesFeed reports whether c takes notices to Everyone: API sockets and
// the pages that follow the public feed.
func (c *Conn) takesFeed() bool { return c.Audience == JSON || c.Feed }

// feedConns returns the sockets here that take notices to Everyone.
func (h *Hub) feedConns() []*Conn {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var conns []*Conn
	for _, u := range h.users {
		for c := range u.conns {
			if c.takesFeed() {
				conns = append(conns, c)
			}
		}
	}
	return conns
}

// noticeFrames are one notice's frames: the API's, and the pages' (nil
// when pages show nothing of it).
type noticeFrames struct {
	api, page []byte
}

// noticeFrames renders a notice for the audiences of conns, once each.
func (h *Hub) noticeFrames(kind domain.NoticeKind, data json.RawMessage, conns []*Conn) noticeFrames {
	f := noticeFrames{api: mustJSON(NoticeFrame{Type: "notice", Notice: kind, Data: data})}
	if slices.ContainsFunc(conns, func(c *Conn) bool { return c.Audience == HTML }) {
		f.page = h.pages.Notice(kind, data)
	}
	return f
}

// deliver queues the notice on conns and has the writers send it; a
// socket too far behind to take it is closed.
func (f noticeFrames) deliver(conns []*Conn) {
	f.queue(conns)
	for _, c := range conns {
		c.wakeIfWaiting()
	}
}

// queue queues the notice on conns without waking the writers; a socket
// too far behind to take it is closed.
func (f noticeFrames) queue(conns []*Conn) {
	for _, c := range conns {
		frame := f.api
		if c.Audience == HTML {
			frame = f.page
		}
		if len(frame) > 0 && !c.enqueue(frame) {
			c.Close()
		}
	}
}

// LatestSeq returns the newest seq this instance heard of for a game (its
// own commits, other instances' announcements), false when it heard
// nothing of it in the last ten minutes.
func (h *Hub) LatestSeq(gameID string) (int, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n, ok := h.latest[domain.GameStreamOf(gameID)]
	return n.seq, ok
}

// Spectators returns a game's spectator sockets on every instance.
func (h *Hub) Spectators(gameID string) int {
	n := (*h.remote.Load())[gameID]
	h.mu.RLock()
	r := h.open[domain.GameStreamOf(gameID)]
	h.mu.RUnlock()
	if r != nil {
		r.mu.Lock()
		n += r.watch
		r.mu.Unlock()
	}
	return n
}

// TotalSpectators returns the spectator sockets of every game on every
// instance.
func (h *Hub) TotalSpectators() int {
	n := 0
	for _, c := range *h.remote.Load() {
		n += c
	}
	for _, r := range h.rooms() {
		r.mu.Lock()
		n += r.watch
		r.mu.Unlock()
	}
	return n
}

func (h *Hub) rooms() []*room {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*room, 0, len(h.open))
	for _, r := range h.open {
		out = append(out, r)
	}
	return out
}

// sendCounts sends each room whose spectator count changed its new count,
// at most once per CrowdEvery.
func (h *Hub) sendCounts() {
	remote := *h.remote.Load()
	for _, r := range h.rooms() {
		r.mu.Lock()
		total := r.watch + remote[r.stream.ID]
		if !r.wire.crowd || total == r.count || len(r.members) == 0 {
			r.mu.Unlock()
			continue
		}
		r.count = total
		f := frame{html: true}
		f.bytes[JSON] = mustJSON(CrowdFrame{Type: "event", Event: domain.EventSpectators, GameID: r.stream.ID, Data: CrowdData{Count: total}})
		f.bytes[HTML] = h.pages.Crowd(total)
		for c := range r.members {
			if !c.deliver(f.bytes[c.Audience]) {
				r.kickLocked(c)
			}
		}
		r.mu.Unlock()
	}
}

// sharePresence publishes this instance's counts, who is online and who
// is in which room, and reads the other instances' counts.
func (h *Hub) sharePresence(ctx context.Context) {
	counts := map[string]int{}
	members := map[domain.RoomMember]struct{}{}
	for _, r := range h.rooms() {
		r.mu.Lock()
		if r.watch > 0 {
			counts[r.stream.ID] = r.watch // only games' rooms count spectators
		}
		r.membersLocked(members)
		r.mu.Unlock()
	}
	if err := h.presence.Publish(ctx, h.instance, counts); err != nil && ctx.Err() == nil {
		h.log.Warn("live: share spectator counts", "err", err)
	}
	h.shareOnline(ctx)
	h.shareRooms(ctx, members)
	others, err := h.presence.Others(ctx, h.instance)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("live: read other instances' spectator counts", "err", err)
		}
		return
	}
	h.remote.Store(&others)
}

// shareOnline writes who came online or went offline here since the last
// time, or every user here when onlineFullEvery has passed.
func (h *Hub) shareOnline(ctx context.Context) {
	var online, offline []string
	h.mu.Lock()
	full := time.Since(h.fullAt) >= onlineFullEvery
	if full {
		h.fullAt = time.Now()
		for id, u := range h.users {
			if len(u.conns) > 0 {
				online = append(online, id)
			}
		}
	} else {
		for id := range h.changed {
			if u := h.users[id]; u != nil && len(u.conns) > 0 {
				online = append(online, id)
			} else {
				offline = append(offline, id)
			}
		}
	}
	clear(h.changed)
	h.mu.Unlock()
	if !full && len(online)+len(offline) == 0 {
		return
	}
	if err := h.presence.SetOnline(ctx, h.instance, online, offline, full); err != nil {
		h.mu.Lock()
		h.fullAt = time.Time{} // the next share writes everything
		h.mu.Unlock()
		if ctx.Err() == nil {
			h.log.Warn("live: share who is online", "err", err)
		}
	}
}

// shareRooms writes who joined or left a room here since the last time,
// or every member when onlineFullEvery has passed.
func (h *Hub) shareRooms(ctx context.Context, members map[domain.RoomMember]struct{}) {
	var joined, left []domain.RoomMember
	full := time.Since(h.sharedAllAt) >= onlineFullEvery
	for m := range members {
		if _, ok := h.shared[m]; full || !ok {
			joined = append(joined, m)
		}
	}
	for m := range h.shared {
		if _, ok := members[m]; !ok && !full {
			left = append(left, m)
		}
	}
	if !full && len(joined)+len(left) == 0 {
		return
	}
	if err := h.presence.SetRooms(ctx, h.instance, joined, left, full); err != nil {
		h.sharedAllAt = time.Time{} // the next share writes everything
		if ctx.Err() == nil {
			h.log.Warn("live: share who is in which room", "err", err)
		}
		return
	}
	if full {
		h.sharedAllAt = time.Now()
	}
	h.shared = members
}

// SweepNow asks Run for a sweep at once, besides the one every
// SweepEvery: after the database listener reconnected, what was announced
// meanwhile was missed. It does not wait for the sweep.
func (h *Hub) SweepNow() {
	select {
	case h.sweepNow <- struct{}{}:
	default: // one is asked for already
	}
}
