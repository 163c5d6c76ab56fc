package live

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"wager/domain"
)

// Event is one stored event of a room.
type Event = domain.StreamEvent

// Store reads stored events of every kind of room: what a room missed
// (another instance's, or a late joiner's replay) and the rooms' positions
// for the periodic check.
type Store interface {
	Events(ctx context.Context, s domain.Stream, after, limit int) ([]Event, error)
	LastSeqs(ctx context.Context, kind domain.StreamKind, ids []string) (map[string]int, error)
}

// Kind is what one kind of room (games, tournaments) brings to the hub:
// how a join is answered and how its pages render its events. The
// registry, the pump, joins, replay, resume and the sweep are the same for
// every kind; its frames on the wire are the kind's (see wireOf).
type Kind struct {
	// Join answers a join: the state everyone may see, its seq, and
	// whether the user plays there; a room that ended answers its seq and
	// Ended. The state is read afresh when the instance's copy is older
	// than atLeast (the seq a resuming client holds: another instance may
	// have committed it). Errors carry a domain code (NOT_FOUND).
	Join func(ctx context.Context, id, userID string, atLeast int) (Joined, error)
	// Open reads what the pages of a room show, for a room that takes its
	// first page: the room keeps it in memory and renders its events with
	// it, without reading again. The error is the read's.
	Open func(ctx context.Context, id string) (PageState, error)
}

// Joined is the answer to a join.
type Joined struct {
	State  json.RawMessage
	Seq    int
	Player bool
	// Ended is what a join of a room that ended answers (a game no longer
	// active: GAME_NOT_ACTIVE), unless it resumes: a resume still gets
	// the events it missed, up to the end.
	Ended error
	// Delay is how late the room's spectators receive its events (a
	// staked Connect Four game's SPECTATOR_DELAY; 0: at once); then State
	// and Seq answer a spectator as of the last event that old, and Latest
	// is the room's newest seq. Events never late (domain.NeverLate) reach
	// its spectators at once besides, as frames marked ahead.
	Delay  time.Duration
	Latest int
}

// PageState is what a room's pages show, kept up to date by the room's
// events alone. The room calls it from one goroutine at a time for new
// events, and from joins for older ones.
type PageState interface {
	// Seq is the seq of the last event the state includes.
	Seq() int
	// Events renders consecutive events of the room, one fragment per
	// event (nil where an event changes nothing a page shows), once it has
	// taken in those after Seq. It reports false, rendering nothing, when
	// the events leave a gap after Seq: the state cannot follow the room
	// any more.
	Events(evs []Event) ([][]byte, bool)
}

// LatePages is a PageState whose pages also render for the spectators of
// a room that sees its events late (Joined.Delay), after Events took in
// the same events: ahead, at once, the fragments of the events never late
// (nil for the others); late, after the delay, an event's fragment where
// it differs from the players' (nil: the same). A spectator's page shows
// the never-late parts only from its ahead fragments, so that an older
// late fragment never replaces a newer one.
type LatePages interface {
	Spectators(evs []Event) (ahead, late [][]byte)
}

// Stateless is the PageState of a room whose pages render each event from
// the event alone: it follows the room from any seq.
type Stateless func(evs []Event) [][]byte

// Seq implements PageState: a stateless rendering lacks no event.
func (s Stateless) Seq() int { return math.MaxInt }

// Events implements PageState.
func (s Stateless) Events(evs []Event) ([][]byte, bool) { return s(evs), true }

// ringLen is how many recent frames a room keeps to answer joins and
// resumes from memory.
const ringLen = 128

// fetchLimit bounds one read of missed events.
const fetchLimit = 500

// room is one room on this instance: its members and the events fanned
// out to them in seq order, the recent frames kept to answer joins and
// resumes from memory, and the events it was told of but has not fanned
// out yet. A member whose queue is full is taken out of the room and told
// to resync: the sender never waits for a socket.
type room struct {
	stream domain.Stream
	wire   *wire  // the kind's frames, shared by its rooms
	resync []byte // tells a member that fell behind to join again with the last seq it has

	mu      sync.Mutex
	seq     int           // last event fanned out
	want    int           // newest seq known to exist
	pending map[int]Event // events this instance committed, not fanned out yet
	pumping bool
	closed  bool    // removed from the registry: a join opens a new one
	ring    []frame // the last ringLen frames fanned out, by seq
	members map[*Conn]*member
	pages   int       // HTML members
	view    PageState // what the pages show; nil while the room has none
	watch   int       // spectator sockets, in rooms that count them
	count   int       // the spectator count last sent
	burst   bool      // the batch being fanned out is more than a queue holds
	behind  []lagging // members the burst left behind, for the pump to catch up
	// delay is how late the spectators receive the room's events (see
	// Joined.Delay), kept once a join said it; release is the timer that
	// gives them the events that came due.
	delay   time.Duration
	release *time.Timer
}

// lagging is a member a burst left behind: the seq it has.
type lagging struct {
	c      *Conn
	after  int
	player bool
	delay  time.Duration // the room's: a late spectator stays late in a room opened again
}

// burstLen is the size of a batch that counts as a burst: more frames at
// once than a socket's queue holds (a tournament's start pairs hundreds of
// games in one transaction). A member that cannot take a burst is caught
// up as a join is, from the room's memory or the store at the pace its
// socket takes, instead of being told to resync.
const burstLen = queueLen

type member struct {
	after  int // the last seq this subscriber has
	player bool
	// late: a spectator of a room with a delay, whose events come in seq
	// order once they are delay old (after is the last of those), and
	// ahead the last never-late event it was sent ahead of them.
	late  bool
	ahead int
}

// frame is one event rendered for each audience; nil bytes: nothing to
// send that audience.
type frame struct {
	seq   int
	at    time.Time // the event's time: the late spectators get it delay after
	bytes [numAudiences][]byte
	html  bool // rendered for pages
	// In a room with a delay: what its late spectators get at once of an
	// event never late (nil for the others), and after the delay where it
	// differs from bytes (nil: bytes).
	ahead, late [numAudiences][]byte
}

// lateBytes is what a late spectator of audience a gets of f after the delay.
func (f *frame) lateBytes(a Audience) []byte {
	if f.late[a] != nil {
		return f.late[a]
	}
	return f.bytes[a]
}

func newRoom(s domain.Stream, known int) *room {
	w := wireOf(s.Kind)
	return &room{stream: s, wire: w, seq: known, resync: w.resyncFrame(s.ID),
		pending: map[int]Event{}, members: map[*Conn]*member{}}
}

// handLocked keeps events this instance committed, in seq order, for the
// pump, and raises what the room must reach to seq; true when the caller
// must start a pump.
func (r *room) handLocked(evs []Event, seq int) bool {
	for _, e := range evs {
		if e.Seq > r.seq {
			r.pending[e.Seq] = e
		}
	}
	return r.wantLocked(seq)
}

// wantLocked raises what the room must reach; true when the caller must
// start a pump (it counts as started).
func (r *room) wantLocked(seq int) bool {
	if seq > r.want {
		r.want = seq
	}
	if r.want > r.seq && !r.pumping && !r.closed {
		r.pumping = true
		return true
	}
	return false
}

// Committed takes events of one room that this instance committed, in seq
// order: they are fanned out without reading them back.
func (h *Hub) Committed(evs []Event) {
	if len(evs) > 0 {
		h.heard(evs[0].Stream, evs[len(evs)-1].Seq, evs)
	}
}

// Announced says that a room has events up to seq (another instance
// committed them): a room here reads what it lacks.
func (h *Hub) Announced(s domain.Stream, seq int) { h.heard(s, seq, nil) }

// heard hands a room here the events up to seq, those it was given and
// the rest to read, starting its pump if none runs.
func (h *Hub) heard(s domain.Stream, seq int, evs []Event) {
	r := h.heardOf(s, seq)
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.handLocked(evs, seq) {
		h.goPump(func() { h.pump(r) })
	}
	r.mu.Unlock()
}

// heardOf records that a room has events up to seq and returns it, nil
// when nobody here follows it.
func (h *Hub) heardOf(s domain.Stream, seq int) *room {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq > h.latest[s].seq {
		h.latest[s] = heard{seq: seq, at: time.Now()}
	}
	return h.open[s]
}

// pump brings a room up to what it must reach, in seq order: it takes the
// events it was handed, reads the ones it lacks, renders them and fans
// them out, until nothing is left. The API sockets get their frames before
// the pages' are rendered.
func (h *Hub) pump(r *room) {
	for {
		evs, ok := h.next(r)
		if !ok {
			return
		}
		r.mu.Lock()
		view, late := r.view, r.delay > 0
		r.mu.Unlock()
		frames := r.renderJSON(evs, late)
		// A late spectator gets an event the delay after the players: after
		// this fan-out, not after its time, which its transaction stamped
		// before it committed.
		now := h.opts.Now()
		for i := range frames {
			frames[i].at = later(frames[i].at, now)
		}
		r.mu.Lock()
		r.burst = len(frames) > burstLen
		r.mu.Unlock()
		if view != nil {
			r.mu.Lock()
			r.sendJSONLocked(frames)
			r.mu.Unlock()
			if !renderPages(view, evs, frames, late) {
				h.log.Warn("live: the pages' state missed events", "room", r.stream, "seq", view.Seq(), "next", evs[0].Seq)
			}
		}
		r.mu.Lock()
		if view != nil && !frames[0].html && r.view == view {
			r.view = nil // the pages rejoin, and a new state is read
		}
		r.fanOutLocked(frames, now)
		r.burst = false
		r.releaseLocked(h)
		behind := r.behind
		r.behind = nil
		r.mu.Unlock()
		for _, l := range behind {
			h.goPump(func() { h.catchUpMember(r, l) })
		}
	}
}

// catchUpMember joins a member a burst left behind again from the seq it
// has, as a join that resumes does; one that cannot be caught up is told
// to resync.
func (h *Hub) catchUpMember(r *room, l lagging) {
	if err := h.Join(h.ctx, l.c, r.stream, l.after, l.after, l.player, l.delay); err != nil {
		if h.ctx.Err() == nil {
			h.log.Warn("live: catch up a socket after a burst", "room", r.stream, "err", err)
		}
		l.c.urgent(r.resync)
	}
}

// next returns the events the pump fans out next, in seq order: those it
// was handed, else read from the store, retried with a growing pause while
// the store fails. It returns false, and the room no longer counts as
// pumping, when nothing is left to reach or the hub stops (a pause ends
// then too).
func (h *Hub) next(r *room) ([]Event, bool) {
	backoff := 50 * time.Millisecond
	for {
		r.mu.Lock()
		if r.seq >= r.want || r.closed {
			r.pumping = false
			r.mu.Unlock()
			return nil, false
		}
		from, to := r.seq, r.want
		var evs []Event
		for seq := from + 1; seq <= to; seq++ {
			e, ok := r.pending[seq]
			if !ok {
				break
			}
			evs = append(evs, e)
		}
		for seq := range r.pending {
			if seq <= to {
				delete(r.pending, seq)
			}
		}
		r.mu.Unlock()
		if len(evs) == to-from {
			return evs, true
		}
		got, err := h.store.Events(h.ctx, r.stream, from, min(to-from, fetchLimit)) // a gap: read the rest
		if err == nil && len(got) > 0 {
			return got, true
		}
		if h.ctx.Err() == nil {
			h.log.Warn("live: read missed events", "room", r.stream, "after", from, "err", err)
			domain.Sleep(h.ctx, backoff)
			backoff = min(2*backoff, 2*time.Second)
		}
		if h.ctx.Err() != nil {
			r.mu.Lock()
			r.pumping = false
			r.mu.Unlock()
			return nil, false
		}
	}
}

// renderJSON renders events for the API sockets, and with late the
// frames its late spectators get ahead.
func (r *room) renderJSON(evs []Event, late bool) []frame {
	frames := make([]frame, len(evs))
	for i, e := range evs {
		frames[i] = frame{seq: e.Seq, at: e.CreatedAt}
		frames[i].bytes[JSON] = r.wire.eventFrame(e, false)
		if late && domain.NeverLate(e.Name) {
			frames[i].ahead[JSON] = r.wire.eventFrame(e, true)
		}
	}
	return frames
}

// renderPages adds the pages' rendering of events to their frames, and
// with late the late spectators' (LatePages); false when the page state
// could not take them.
func renderPages(view PageState, evs []Event, frames []frame, late bool) bool {
	html, ok := view.Events(evs)
	if !ok {
		return false
	}
	var ahead, behind [][]byte
	if lp, ok := view.(LatePages); ok && late {
		ahead, behind = lp.Spectators(evs)
	}
	for i := range frames {
		frames[i].html = true
		if i < len(html) {
			frames[i].bytes[HTML] = html[i]
		}
		if i < len(ahead) {
			frames[i].ahead[HTML] = ahead[i]
		}
		if i < len(behind) {
			frames[i].late[HTML] = behind[i]
		}
	}
	return true
}

// sendJSONLocked queues the API sockets' frames on the room's API
// members, ahead of the rest of the fan-out (fanOutLocked skips what they
// have).
func (r *room) sendJSONLocked(frames []frame) {
	for _, f := range frames {
		if f.seq <= r.seq {
			continue
		}
		for c, m := range r.members {
			if c.Audience != JSON || f.seq <= m.after {
				continue
			}
			if m.late {
				if !r.aheadLocked(c, m, f) {
					r.kickLocked(c)
				}
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

// fanOutLocked queues frames for every member that lacks them and keeps
// them for later joins. A member whose queue is full leaves the room with
// a resync frame, or during a burst to be caught up (see burstLen).
// In a room with a delay, now is the time the frames are kept by.
func (r *room) fanOutLocked(frames []frame, now time.Time) {
	for _, f := range frames {
		if f.seq <= r.seq {
			continue
		}
		for c, m := range r.members {
			if f.seq <= m.after {
				continue
			}
			if c.Audience == HTML && !f.html {
				r.kickLocked(c) // a page joined while the batch rendered without pages
				continue
			}
			if m.late {
				if !r.aheadLocked(c, m, f) {
					r.kickLocked(c)
				}
				continue // releaseLocked sends it once it is delay old
			}
			if b := f.bytes[c.Audience]; b != nil && !c.deliver(b) {
				r.kickLocked(c)
				continue
			}
			m.after = f.seq
		}
		r.seq = f.seq
		r.ring = append(r.ring, f)
		r.trimLocked(now)
	}
}

// trimLocked keeps the last ringLen frames, and in a room with a delay
// every frame its late spectators may still lack: those not the delay old
// at now (however many a flood of chat brings).
func (r *room) trimLocked(now time.Time) {
	n := len(r.ring) - ringLen
	for n > 0 && r.delay > 0 && r.ring[n-1].at.Add(r.delay).After(now) {
		n--
	}
	if n > 0 {
		r.ring = append(r.ring[:0], r.ring[n:]...)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// aheadLocked sends a late spectator a never-late event at once, unless
// it was sent already; false when its queue is full.
func (r *room) aheadLocked(c *Conn, m *member, f frame) bool {
	if f.seq <= m.ahead || f.ahead[c.Audience] == nil {
		return true
	}
	m.ahead = f.seq
	return c.deliver(f.ahead[c.Audience])
}

// releaseLocked sends the late spectators, in seq order from the room's
// memory, every event that is delay old now, and sets the timer for the
// next one. A spectator whose next event the memory no longer holds is
// told to resync (its join reads what it lacks: joinLateLocked).
func (r *room) releaseLocked(h *Hub) {
	if r.delay == 0 || r.closed {
		return
	}
	now := h.opts.Now()
	var next time.Time
	for c, m := range r.members {
		if !m.late {
			continue
		}
		if m.after < r.seq && !r.reachesLocked(m.after) {
			r.kickLocked(c)
			continue
		}
		for _, f := range r.ring {
			if f.seq <= m.after {
				continue
			}
			if due := f.at.Add(r.delay); due.After(now) {
				if next.IsZero() || due.Before(next) {
					next = due
				}
				break
			}
			// A frame filled back from the store has nothing for pages: the
			// next one renders the board whole.
			if b := f.lateBytes(c.Audience); b != nil && (c.Audience == JSON || f.html) && !c.deliver(b) {
				r.kickLocked(c)
				break
			}
			m.after = f.seq
		}
	}
	if next.IsZero() {
		return
	}
	wait := max(next.Sub(now), 10*time.Millisecond)
	if r.release == nil {
		r.release = time.AfterFunc(wait, func() { h.releaseDue(r) })
	} else {
		r.release.Reset(wait)
	}
}

// releaseDue is the room's release timer: the late spectators get what
// came due.
func (h *Hub) releaseDue(r *room) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releaseLocked(h)
}

// reachesLocked reports whether the room's memory holds every frame after
// seq.
func (r *room) reachesLocked(seq int) bool {
	return seq >= r.seq || (len(r.ring) > 0 && seq >= r.ring[0].seq-1)
}

// kickLocked takes a member that fell behind out of the room and tells it
// to resync, or, during a burst, leaves it for the pump to catch up.
func (r *room) kickLocked(c *Conn) {
	m := r.members[c]
	r.removeLocked(c)
	c.left(r.stream)
	if r.burst && m != nil {
		r.behind = append(r.behind, lagging{c: c, after: m.after, player: m.player, delay: r.delay})
		return
	}
	c.urgent(r.resync)
}

func (r *room) removeLocked(c *Conn) {
	m := r.members[c]
	if m == nil {
		return
	}
	delete(r.members, c)
	if !m.player && r.wire.crowd {
		r.watch--
	}
	if c.Audience == HTML {
		r.pages--
		if r.pages == 0 {
			r.view = nil // rendering for nobody; the next page reads it again
		}
	}
}

// membersLocked adds the room's members that count as in it for an arena's
// pairing: every signed-in member of a tournament's room, the players of a
// game's.
func (r *room) membersLocked(to map[domain.RoomMember]struct{}) {
	for c, m := range r.members {
		if c.UserID != "" && (m.player || r.stream.Kind == domain.TournamentStream) {
			to[domain.RoomMember{RoomID: r.stream.ID, UserID: c.UserID}] = struct{}{}
		}
	}
}

// closeIfEmpty marks the room closed when it has no members and reports
// whether it did; the caller holds the registry's lock and takes the room
// out of it (a join that finds the room closed opens a new one).
func (r *room) closeIfEmpty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.members) == 0 {
		r.closed = true
		if r.release != nil {
			r.release.Stop()
		}
	}
	return r.closed
}

// replayLocked returns the frames after seq for an audience from the
// room's memory, or false when the memory does not reach back that far.
func (r *room) replayLocked(after int, a Audience) ([][]byte, bool) {
	if after >= r.seq {
		return nil, true
	}
	if !r.reachesLocked(after) {
		return nil, false
	}
	var out [][]byte
	for _, f := range r.ring {
		if f.seq <= after {
			continue
		}
		if a == HTML && !f.html {
			return nil, false
		}
		if b := f.bytes[a]; b != nil {
			out = append(out, b)
		}
	}
	return out, true
}

// backlog is what a join must queue before its connection becomes a
// member: the frames after its seq up to upTo, from the room's memory
// when it reaches back that far (memory), else read from the store.
type backlog struct {
	frames [][]byte
	memory bool
	upTo   int
	late   bool // for a late spectator: only the events that are due
	// backfill: the room's memory is to be filled back from the store to
	// the seq a late spectator has, instead.
	backfill bool
}

// joinLocked makes c a member, from afterSeq on, when nothing is left to
// queue on it first, and reports true. Otherwise it returns what catchUp
// must queue first, outside the room's lock. A spectator of a room with a
// delay joins through joinLateLocked.
func (r *room) joinLocked(h *Hub, c *Conn, afterSeq int, player bool, tried int) (backlog, bool) {
	if !player && r.delay > 0 {
		return r.joinLateLocked(h, c, afterSeq, tried)
	}
	replay, ok := r.replayLocked(afterSeq, c.Audience)
	if !ok || len(replay) > 0 {
		return backlog{frames: replay, memory: ok, upTo: r.seq}, false
	}
	if !c.joined(r.stream, r) { // under the room's lock, so that a kick cannot come between
		return backlog{}, true // closed: nothing to join
	}
	r.addLocked(c, &member{after: max(afterSeq, r.seq), player: player})
	return backlog{}, true
}

func (r *room) addLocked(c *Conn, m *member) {
	r.members[c] = m
	if c.Audience == HTML {
		r.pages++
	}
	if !m.player && r.wire.crowd {
		r.watch++
	}
}

// joinLateLocked makes c a late spectator from afterSeq on: it gets at
// once the never-late events after afterSeq that the room's memory holds,
// and the others as they come due (releaseLocked). When the memory does
// not reach back to afterSeq (the room opened here after it), an API
// socket first reads the events that are due from the store (read:
// catchUp), then the room's memory is filled back from the store to the
// seq it has (backfill); a page continues from what the memory holds, as
// pages cannot be rendered for older events: the next rendering of the
// board shows it whole. tried counts those steps done (a backfill that
// found the memory changed is not tried again).
func (r *room) joinLateLocked(h *Hub, c *Conn, afterSeq int, tried int) (backlog, bool) {
	if !r.reachesLocked(afterSeq) {
		if c.Audience == JSON && tried < 2 {
			return backlog{upTo: r.seq, late: tried == 0, backfill: tried == 1}, false
		}
		afterSeq = r.seq
		if len(r.ring) > 0 {
			afterSeq = r.ring[0].seq - 1
		}
	}
	if !c.joined(r.stream, r) {
		return backlog{}, true
	}
	m := &member{after: afterSeq, late: true}
	r.addLocked(c, m)
	for _, f := range r.ring {
		if f.seq > afterSeq && !r.aheadLocked(c, m, f) {
			r.kickLocked(c)
			return backlog{}, true
		}
	}
	r.releaseLocked(h)
	return backlog{}, true
}

// Join adds a connection to a room and queues, in order, every event
// after afterSeq (from the room's memory when it has them, else read from
// the store), then live events. known is the seq of the state the caller
// was answered with; player says whether the user plays there; delay is
// how late the room's spectators see its events (Joined.Delay). A room's
// first page reads what pages show (Kind.Open). It returns an error only
// when the store or the pages' state cannot be read.
func (h *Hub) Join(ctx context.Context, c *Conn, s domain.Stream, afterSeq, known int, player bool, delay time.Duration) error {
	tried := 0 // a late spectator's steps to reach the room's memory
	for {
		r := h.room(s, known)
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			continue
		}
		r.delay = max(r.delay, delay) // kept once said: a game that ended answers 0
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
		b, joined := r.joinLocked(h, c, afterSeq, player, tried)
		view, delay := r.view, r.delay
		r.mu.Unlock()
		if joined {
			return nil
		}
		if b.late || b.backfill {
			tried++
		}
		if b.backfill {
			if err := h.backfill(ctx, r, afterSeq); err != nil {
				return err
			}
			continue
		}
		var ok bool
		var err error
		afterSeq, ok, err = h.catchUp(ctx, c, afterSeq, b, func(ctx context.Context, after, limit int) ([]frame, error) {
			evs, err := h.store.Events(ctx, s, after, limit)
			if b.late {
				evs = domain.Due(evs, h.opts.Now(), delay)
			}
			if err != nil || len(evs) == 0 {
				return nil, err
			}
			frames := r.renderJSON(evs, delay > 0)
			if c.Audience == HTML && !renderPages(view, evs, frames, delay > 0) {
				return nil, nil // the pages' state was replaced meanwhile: look again
			}
			return frames, nil
		})
		if err != nil || !ok {
			return err
		}
	}
}

// backfill reads from the store the events of a room with a delay after
// seq after that its memory lacks and puts them in front of it, for a late
// spectator who has after: these are not yet due (the others it read
// already), so that they are few. It returns the store's error.
func (h *Hub) backfill(ctx context.Context, r *room, after int) error {
	r.mu.Lock()
	upTo := r.seq
	if len(r.ring) > 0 {
		upTo = r.ring[0].seq - 1
	}
	r.mu.Unlock()
	var frames []frame
	for from := after; from < upTo; {
		evs, err := h.store.Events(ctx, r.stream, from, min(upTo-from, fetchLimit))
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		frames = append(frames, r.renderJSON(evs, true)...)
		from = evs[len(evs)-1].Seq
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first := r.seq + 1
	if len(r.ring) > 0 {
		first = r.ring[0].seq
	}
	if n := len(frames); n > 0 && frames[n-1].seq == first-1 && frames[0].seq == after+1 {
		r.ring = append(frames, r.ring...)
	}
	return nil
}

// catchUp queues a join's backlog on c, in order, outside the room's lock
// (the socket's writer drains its queue meanwhile): the room's frames, or
// what read renders from the store, until it reaches b.upTo or read
// returns nothing. It returns the seq c has then, and false when c stopped
// taking frames (closed, or nothing taken for writeWait); the error is
// read's.
func (h *Hub) catchUp(ctx context.Context, c *Conn, after int, b backlog, read func(ctx context.Context, after, limit int) ([]frame, error)) (int, bool, error) {
	if b.memory {
		for _, f := range b.frames {
			if !c.push(f, h.writeWait) {
				return after, false, nil
			}
		}
		return b.upTo, true, nil
	}
	for after < b.upTo {
		frames, err := read(ctx, after, min(b.upTo-after, fetchLimit))
		if err != nil {
			return after, false, err
		}
		if len(frames) == 0 {
			break
		}
		for _, f := range frames {
			if b := f.bytes[c.Audience]; b != nil && !c.push(b, h.writeWait) {
				return after, false, nil
			}
		}
		after = frames[len(frames)-1].seq
	}
	return after, true, nil
}

// openPages reads what a room's pages show and gives it to the room, once
// it includes every event the room sent (it reads those it lacks). Another
// join may have done it meanwhile.
func (h *Hub) openPages(ctx context.Context, r *room) error {
	view, err := h.kinds[r.stream.Kind].Open(ctx, r.stream.ID)
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
		evs, err := h.store.Events(ctx, r.stream, from, min(to-from, fetchLimit))
		if err != nil {
			return err
		}
		if _, ok := view.Events(evs); !ok || len(evs) == 0 {
			return fmt.Errorf("live: bring the pages of %s from seq %d to %d: the store has no events after %d", r.stream, from, to, from)
		}
	}
}

// room returns the open room of a stream, opening it at seq known when
// there is none.
func (h *Hub) room(s domain.Stream, known int) *room {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.open[s]; r != nil {
		return r
	}
	r := newRoom(s, known)
	h.open[s] = r
	if latest := h.latest[s].seq; latest > known {
		r.mu.Lock()
		if r.wantLocked(latest) {
			h.goPump(func() { h.pump(r) })
		}
		r.mu.Unlock()
	}
	return r
}

// Leave takes a connection out of a room.
func (h *Hub) Leave(c *Conn, s domain.Stream) {
	if r := c.left(s); r != nil {
		r.leave(h, c)
	}
}

// leave takes the connection out of the room, closing the room after its
// last member.
func (r *room) leave(h *Hub, c *Conn) {
	r.mu.Lock()
	r.removeLocked(c)
	empty := len(r.members) == 0
	r.mu.Unlock()
	if !empty {
		return
	}
	h.mu.Lock()
	if h.open[r.stream] == r && r.closeIfEmpty() {
		delete(h.open, r.stream)
	}
	h.mu.Unlock()
}

// sweep checks the open rooms against the store and catches up those
// that missed an announcement, gives late spectators what came due (an instance that stopped between a commit
// and its announcement, a listener that reconnected). It closes the rooms
// left without members by their last member falling behind (a kick, under
// the room's lock alone, cannot close a room), forgets old news of rooms
// nobody here follows, and users without sockets whose pace of openings
// is back to full.
func (h *Hub) sweep(ctx context.Context) {
	ids := map[domain.StreamKind][]string{}
	var open []*room
	h.mu.Lock()
	for s, r := range h.open {
		if r.closeIfEmpty() {
			delete(h.open, s)
			continue
		}
		ids[s.Kind] = append(ids[s.Kind], s.ID)
		open = append(open, r)
	}
	for s, n := range h.latest {
		if time.Since(n.at) > 10*time.Minute && h.open[s] == nil {
			delete(h.latest, s)
		}
	}
	for id, u := range h.users {
		if len(u.conns) == 0 && u.opens.Tokens() >= MaxSocketsPerUser {
			delete(h.users, id)
		}
	}
	h.mu.Unlock()
	for _, r := range open {
		h.releaseDue(r) // besides its timer: a clock a test moves
	}
	for kind, ids := range ids {
		seqs, err := h.store.LastSeqs(ctx, kind, ids)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("live: check rooms for missed events", "kind", kind, "err", err)
			}
			continue
		}
		for id, seq := range seqs {
			h.Announced(domain.Stream{Kind: kind, ID: id}, seq)
		}
	}
}
