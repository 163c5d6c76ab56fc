// Package live is the WebSocket layer: the hub that keeps one instance's
// game rooms and users' sockets, and the socket protocol (join, leave,
// resume by seq, resync, personal notices, spectator counts).
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
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"wager/domain"
)

// Event is one stored room event.
type Event struct {
	GameID string
	Seq    int
	Name   domain.EventName
	Data   json.RawMessage
}

// Store reads stored events: what a room missed (another instance's, or
// a late joiner's replay) and the rooms' positions for the periodic check.
type Store interface {
	Events(ctx context.Context, gameID string, after, limit int) ([]Event, error)
	LastSeqs(ctx context.Context, gameIDs []string) (map[string]int, error)
}

// Pages renders what browser pages receive.
type Pages interface {
	// Open reads what the pages of a game show, for a room that takes its
	// first page: the room keeps it in memory and renders its events with
	// it, without reading again. The error is the read's.
	Open(ctx context.Context, gameID string) (PageState, error)
	// Crowd renders a spectator count.
	Crowd(count int) []byte
	// Notice renders a personal notice for the user's pages (a new
	// balance for the header); nil when pages show nothing of it.
	Notice(kind domain.NoticeKind, data json.RawMessage) []byte
}

// PageState is what a room's pages show, kept up to date by the room's
// events alone. The room calls it from one goroutine at a time for new
// events, and from joins for older ones.
type PageState interface {
	// Seq is the seq of the last event the state includes.
	Seq() int
	// Events renders consecutive events of the game, one fragment per
	// event (nil where an event changes nothing a page shows), once it has
	// taken in those after Seq. It reports false, rendering nothing, when
	// the events leave a gap after Seq: the state cannot follow the game
	// any more.
	Events(evs []Event) ([][]byte, bool)
}

// Presence shares spectator counts and who is online between instances.
type Presence interface {
	Publish(ctx context.Context, instance string, counts map[string]int) error
	Others(ctx context.Context, instance string) (map[string]int, error)
	// SetOnline records the users who opened their first socket here
	// (online) or closed their last (offline) since the last call; with
	// full, online is every user with a socket here and nobody else is.
	SetOnline(ctx context.Context, instance string, online, offline []string, full bool) error
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

// Rooms answers joins: the state everyone may see, its seq, and whether
// the user plays in the game. Errors carry a domain code (NOT_FOUND,
// GAME_NOT_ACTIVE).
type Rooms interface {
	Join(ctx context.Context, gameID, userID string) (Joined, error)
}

// Joined is the answer to a join.
type Joined struct {
	State  json.RawMessage
	Seq    int
	Player bool
}

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
}

// Hub is one instance's live rooms and sockets.
type Hub struct {
	store    Store
	pages    Pages
	presence Presence
	joins    Rooms
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
	open   map[string]*room
	latest map[string]heard // newest seq heard of per game, for rooms opened later
	users  map[string]*userSockets

	remote atomic.Pointer[map[string]int] // other instances' spectator counts

	// Users whose first socket opened or last closed since presence was
	// last shared, and when the full set was last written; under mu.
	changed map[string]struct{}
	fullAt  time.Time

	feedFrames *rate.Limiter     // of notices to Everyone
	feeds      atomic.Int64      // registered sockets that take notices to Everyone
	feed       chan feedDelivery // notices to Everyone that Run delivers
	writers    *writers          // send the sockets' queued frames

	tours *tournamentRooms
}

type heard struct {
	seq int
	at  time.Time
}

// New returns a hub whose tournament rooms read and render through tours;
// Run starts its background work.
func New(store Store, pages Pages, presence Presence, rooms Rooms, tours Tournaments, instance string, log *slog.Logger,
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
	if opts.Pause == nil {
		opts.Pause = domain.Sleep
	}
	ctx, stop := context.WithCancel(context.Background())
	h := &Hub{store: store, pages: pages, presence: presence, joins: rooms, instance: instance, log: log, opts: opts,
		ctx: ctx, stop: stop, writeWait: writeWait, open: map[string]*room{}, latest: map[string]heard{}, users: map[string]*userSockets{},
		sweepNow: make(chan struct{}, 1), changed: map[string]struct{}{},
		feedFrames: rate.NewLimiter(FeedFramesPerSecond, FeedFramesPerSecond),
		feed:       make(chan feedDelivery, 2*BroadcastsPerSecond), writers: newWriters(), tours: newTournamentRooms(tours)}
	h.remote.Store(&map[string]int{})
	return h
}

// room is one game's live room on this instance; what follows the
// seqRoom is under its mu.
type room struct {
	seqRoom[Event]
	watch int       // spectator sockets
	view  PageState // what the pages show; nil while the room has none
	count int       // the spectator count last sent
}

func newRoom(gameID string, known int) *room {
	r := &room{}
	r.init(r, gameID, false, known, mustJSON(ResyncFrame{Type: "resync", GameID: gameID}))
	r.gone = func(c *Conn, m *member) {
		if !m.player {
			r.watch--
		}
		if c.Audience == HTML && r.pages == 0 {
			r.view = nil // rendering for nobody; the next page reads it again
		}
	}
	return r
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

// Committed takes events of one game that this instance committed, in seq
// order: they are fanned out without reading them back.
func (h *Hub) Committed(evs []Event) {
	if len(evs) == 0 {
		return
	}
	r := h.heardOf(evs[0].GameID, evs[len(evs)-1].Seq)
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.handLocked(evs) {
		h.goPump(func() { h.pump(r) })
	}
	r.mu.Unlock()
}

// Announced says that a game has events up to seq (another instance
// committed them): a room here reads what it lacks.
func (h *Hub) Announced(gameID string, seq int) {
	r := h.heardOf(gameID, seq)
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.wantLocked(seq) {
		h.goPump(func() { h.pump(r) })
	}
	r.mu.Unlock()
}

// heardOf records that a game has events up to seq and returns its room,
// nil when nobody here watches it.
func (h *Hub) heardOf(gameID string, seq int) *room {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq > h.latest[gameID].seq {
		h.latest[gameID] = heard{seq: seq, at: time.Now()}
	}
	return h.open[gameID]
}

// pump brings a room up to what it must reach, in seq order: it takes the
// events it was handed, reads the ones it lacks, renders them and fans
// them out, until nothing is left. The API sockets get their frames before
// the pages' are rendered.
func (h *Hub) pump(r *room) {
	read := func(ctx context.Context, after, limit int) ([]Event, error) {
		return h.store.Events(ctx, r.id, after, limit)
	}
	for {
		evs, ok := r.next(h, read)
		if !ok {
			return
		}
		r.mu.Lock()
		view := r.view
		r.mu.Unlock()
		frames := renderJSON(evs)
		if view != nil {
			r.mu.Lock()
			h.sendJSONLocked(r, frames)
			r.mu.Unlock()
			if !renderPages(view, evs, frames) {
				h.log.Warn("live: the pages' state missed events", "game", r.id, "seq", view.Seq(), "next", evs[0].Seq)
			}
		}
		r.mu.Lock()
		if view != nil && !frames[0].html && r.view == view {
			r.view = nil // the pages rejoin, and a new state is read
		}
		r.fanOutLocked(frames)
		r.mu.Unlock()
	}
}

// renderJSON renders events for the API sockets.
func renderJSON(evs []Event) []frame {
	frames := make([]frame, len(evs))
	for i, e := range evs {
		frames[i] = frame{seq: e.Seq}
		frames[i].bytes[JSON] = mustJSON(EventFrame{Type: "event", Event: e.Name, GameID: e.GameID, Seq: e.Seq, Data: e.Data})
	}
	return frames
}

// renderPages adds the pages' rendering of events to their frames; false
// when the page state could not take them.
func renderPages(view PageState, evs []Event, frames []frame) bool {
	html, ok := view.Events(evs)
	if !ok {
		return false
	}
	for i := range frames {
		frames[i].html = true
		if i < len(html) {
			frames[i].bytes[HTML] = html[i]
		}
	}
	return true
}

// sendJSONLocked queues the API sockets' frames on the room's API
// members, ahead of the rest of the fan-out (fanOutLocked skips what they
// have).
func (h *Hub) sendJSONLocked(r *room, frames []frame) {
	for _, f := range frames {
		if f.seq <= r.seq {
			continue
		}
		for c, m := range r.members {
			if c.Audience != JSON || f.seq <= m.after {
				continue
			}
			if !c.deliver(f.bytes[JSON]) {
				r.kickLocked(c)
				continue
			}
			m.after = f.seq
		}
	}
}

// Join adds a connection to a game's room and queues, in order, every
// event after afterSeq (from the room's memory when it has them, else
// read from the store), then live events. known is the seq of the state
// the caller was answered with; player says whether the user plays there.
// A room's first page reads what pages show (Pages.Open). It returns an
// error only when the store or the pages' state cannot be read.
func (h *Hub) Join(ctx context.Context, c *Conn, gameID string, afterSeq, known int, player bool) error {
	for {
		r := h.room(gameID, known)
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			continue
		}
		if _, in := r.members[c]; in {
			r.mu.Unlock()
			return nil
		}
		if c.Audience == HTML && r.view == nil {
			r.mu.Unlock()
			if err := h.openPages(ctx, r); err != nil {
				return err
			}
			continue
		}
		b, joined := r.joinLocked(c, afterSeq, player)
		if joined && !player {
			r.watch++
		}
		view := r.view
		r.mu.Unlock()
		if joined {
			return nil
		}
		var ok bool
		var err error
		afterSeq, ok, err = h.catchUp(ctx, c, afterSeq, b, func(ctx context.Context, after, limit int) ([]frame, error) {
			evs, err := h.store.Events(ctx, gameID, after, limit)
			if err != nil || len(evs) == 0 {
				return nil, err
			}
			frames := renderJSON(evs)
			if c.Audience == HTML && !renderPages(view, evs, frames) {
				return nil, nil // the pages' state was replaced meanwhile: look again
			}
			return frames, nil
		})
		if err != nil || !ok {
			return err
		}
	}
}

// openPages reads what a room's pages show and gives it to the room, once
// it includes every event the room sent (it reads those it lacks). Another
// join may have done it meanwhile.
func (h *Hub) openPages(ctx context.Context, r *room) error {
	view, err := h.pages.Open(ctx, r.id)
	if err != nil {
		return err
	}
	for {
		r.mu.Lock()
		if r.view != nil || r.closed {
			r.mu.Unlock()
			return nil
		}
		from, to := view.Seq(), r.seq
		if from >= to {
			r.view = view
			r.mu.Unlock()
			return nil
		}
		r.mu.Unlock()
		evs, err := h.store.Events(ctx, r.id, from, min(to-from, fetchLimit))
		if err != nil {
			return err
		}
		if _, ok := view.Events(evs); !ok || len(evs) == 0 {
			return fmt.Errorf("live: bring the pages of game %s from seq %d to %d: the store has no events after %d", r.id, from, to, from)
		}
	}
}

// room returns the open room of a game, opening it at seq known when
// there is none.
func (h *Hub) room(gameID string, known int) *room {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.open[gameID]; r != nil {
		return r
	}
	r := newRoom(gameID, known)
	h.open[gameID] = r
	if latest := h.latest[gameID].seq; latest > known {
		r.mu.Lock()
		if r.wantLocked(latest) {
			h.goPump(func() { h.pump(r) })
		}
		r.mu.Unlock()
	}
	return r
}

// Leave takes a connection out of a game's room.
func (h *Hub) Leave(c *Conn, gameID string) {
	if r := c.left(roomKey{id: gameID}); r != nil {
		r.leave(h, c)
	}
}

func (r *room) leave(h *Hub, c *Conn) {
	r.mu.Lock()
	r.removeLocked(c)
	empty := len(r.members) == 0
	r.mu.Unlock()
	if !empty {
		return
	}
	h.mu.Lock()
	if h.open[r.id] == r && r.closeIfEmpty() {
		delete(h.open, r.id)
	}
	h.mu.Unlock()
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
	n, ok := h.latest[gameID]
	return n.seq, ok
}

// Spectators returns a game's spectator sockets on every instance.
func (h *Hub) Spectators(gameID string) int {
	n := (*h.remote.Load())[gameID]
	h.mu.RLock()
	r := h.open[gameID]
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
		total := r.watch + remote[r.id]
		if total == r.count || len(r.members) == 0 {
			r.mu.Unlock()
			continue
		}
		r.count = total
		f := frame{html: true}
		f.bytes[JSON] = mustJSON(CrowdFrame{Type: "event", Event: domain.EventSpectators, GameID: r.id, Data: CrowdData{Count: total}})
		f.bytes[HTML] = h.pages.Crowd(total)
		for c := range r.members {
			if !c.deliver(f.bytes[c.Audience]) {
				r.kickLocked(c)
			}
		}
		r.mu.Unlock()
	}
}

// sharePresence publishes this instance's counts and reads the others'.
func (h *Hub) sharePresence(ctx context.Context) {
	counts := map[string]int{}
	for _, r := range h.rooms() {
		r.mu.Lock()
		if r.watch > 0 {
			counts[r.id] = r.watch
		}
		r.mu.Unlock()
	}
	if err := h.presence.Publish(ctx, h.instance, counts); err != nil && ctx.Err() == nil {
		h.log.Warn("live: share spectator counts", "err", err)
	}
	h.shareOnline(ctx)
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

// SweepNow asks Run for a sweep at once, besides the one every
// SweepEvery: after the database listener reconnected, what was announced
// meanwhile was missed. It does not wait for the sweep.
func (h *Hub) SweepNow() {
	select {
	case h.sweepNow <- struct{}{}:
	default: // one is asked for already
	}
}

// sweep checks the open rooms of games and tournaments against the store.
func (h *Hub) sweep(ctx context.Context) {
	h.sweepGames(ctx)
	h.sweepTournaments(ctx)
}

// sweepGames checks the open game rooms against the store and catches up
// those that missed an announcement (an instance that stopped between a
// commit and its announcement, a listener that reconnected). It closes
// the rooms left without members by their last member falling behind (a
// kick, under the room's lock alone, cannot close a room), forgets old
// news of games nobody here watches, and users without sockets whose pace
// of openings is back to full.
func (h *Hub) sweepGames(ctx context.Context) {
	h.mu.Lock()
	ids := make([]string, 0, len(h.open))
	for id, r := range h.open {
		if r.closeIfEmpty() {
			delete(h.open, id)
			continue
		}
		ids = append(ids, id)
	}
	for id, n := range h.latest {
		if time.Since(n.at) > 10*time.Minute && h.open[id] == nil {
			delete(h.latest, id)
		}
	}
	for id, u := range h.users {
		if len(u.conns) == 0 && u.opens.Tokens() >= MaxSocketsPerUser {
			delete(h.users, id)
		}
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	seqs, err := h.store.LastSeqs(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("live: check rooms for missed events", "err", err)
		}
		return
	}
	for id, seq := range seqs {
		h.Announced(id, seq)
	}
}
