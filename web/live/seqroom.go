package live

import (
	"context"
	"sync"
	"time"

	"wager/domain"
)

// ringLen is how many recent frames a room keeps to answer joins and
// resumes from memory.
const ringLen = 128

// fetchLimit bounds one read of missed events.
const fetchLimit = 500

// numbered is a stored event of a room: its seq numbers it in its game or
// tournament, 1, 2, 3, ... without gaps.
type numbered interface{ number() int }

func (e Event) number() int           { return e.Seq }
func (e TournamentEvent) number() int { return e.Seq }

// seqRoom is what a game's room and a tournament's share: the members and
// the events fanned out to them in seq order, the recent frames kept to
// answer joins and resumes from memory, and the events it was told of but
// has not fanned out yet. A member whose queue is full is taken out of
// the room and told to resync: the sender never waits for a socket.
type seqRoom[E numbered] struct {
	id         string
	tournament bool
	self       joinedRoom           // the room that embeds this one, as its members' connections list it
	resync     []byte               // tells a member that fell behind to join again with the last seq it has
	gone       func(*Conn, *member) // called under mu when a member left, kicked or not; nil: nothing to do

	mu      sync.Mutex
	seq     int       // last event fanned out
	want    int       // newest seq known to exist
	pending map[int]E // events this instance committed, not fanned out yet
	pumping bool
	closed  bool    // removed from its registry: a join opens a new one
	ring    []frame // the last ringLen frames fanned out, by seq
	members map[*Conn]*member
	pages   int // HTML members
}

// joinedRoom is a room as a connection lists the rooms it is in.
type joinedRoom interface {
	// leave takes the connection out of the room, closing the room after
	// its last member.
	leave(h *Hub, c *Conn)
}

// roomKey names a room among a connection's rooms.
type roomKey struct {
	tournament bool
	id         string
}

type member struct {
	after  int // the last seq this subscriber has
	player bool
}

// frame is one event rendered for each audience; nil bytes: nothing to
// send that audience.
type frame struct {
	seq   int
	bytes [numAudiences][]byte
	html  bool // rendered for pages
}

func (r *seqRoom[E]) init(self joinedRoom, id string, tournament bool, seq int, resync []byte) {
	r.self, r.id, r.tournament, r.seq, r.resync = self, id, tournament, seq, resync
	r.pending = map[int]E{}
	r.members = map[*Conn]*member{}
}

func (r *seqRoom[E]) key() roomKey { return roomKey{tournament: r.tournament, id: r.id} }

// kind names the room's stream in log lines.
func (r *seqRoom[E]) kind() string {
	if r.tournament {
		return "tournament"
	}
	return "game"
}

// handLocked keeps events this instance committed, in seq order, for the
// pump; true when the caller must start one.
func (r *seqRoom[E]) handLocked(evs []E) bool {
	for _, e := range evs {
		if n := e.number(); n > r.seq {
			r.pending[n] = e
		}
	}
	return r.wantLocked(evs[len(evs)-1].number())
}

// wantLocked raises what the room must reach; true when the caller must
// start a pump (it counts as started).
func (r *seqRoom[E]) wantLocked(seq int) bool {
	if seq > r.want {
		r.want = seq
	}
	if r.want > r.seq && !r.pumping && !r.closed {
		r.pumping = true
		return true
	}
	return false
}

// next returns the events the pump fans out next, in seq order: those it
// was handed, else read from the store with read, retried with a growing
// pause while the store fails. It returns false, and the room no longer
// counts as pumping, when nothing is left to reach or the hub stops (a
// pause ends then too).
func (r *seqRoom[E]) next(h *Hub, read func(ctx context.Context, after, limit int) ([]E, error)) ([]E, bool) {
	backoff := 50 * time.Millisecond
	for {
		r.mu.Lock()
		if r.seq >= r.want || r.closed {
			r.pumping = false
			r.mu.Unlock()
			return nil, false
		}
		from, to := r.seq, r.want
		var evs []E
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
		got, err := read(h.ctx, from, min(to-from, fetchLimit)) // a gap: read the rest
		if err == nil && len(got) > 0 {
			return got, true
		}
		if h.ctx.Err() == nil {
			h.log.Warn("live: read missed events", r.kind(), r.id, "after", from, "err", err)
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

// fanOutLocked queues frames for every member that lacks them and keeps
// them for later joins. A member whose queue is full leaves the room with
// a resync frame.
func (r *seqRoom[E]) fanOutLocked(frames []frame) {
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
			if b := f.bytes[c.Audience]; b != nil && !c.deliver(b) {
				r.kickLocked(c)
				continue
			}
			m.after = f.seq
		}
		r.seq = f.seq
		if len(r.ring) == ringLen {
			copy(r.ring, r.ring[1:])
			r.ring = r.ring[:ringLen-1]
		}
		r.ring = append(r.ring, f)
	}
}

// kickLocked takes a member that fell behind out of the room and tells it
// to resync.
func (r *seqRoom[E]) kickLocked(c *Conn) {
	r.removeLocked(c)
	c.left(r.key())
	c.urgent(r.resync)
}

func (r *seqRoom[E]) removeLocked(c *Conn) {
	m := r.members[c]
	if m == nil {
		return
	}
	delete(r.members, c)
	if c.Audience == HTML {
		r.pages--
	}
	if r.gone != nil {
		r.gone(c, m)
	}
}

// closeIfEmpty marks the room closed when it has no members and reports
// whether it did; the caller holds its registry's lock and takes the room
// out of it (a join that finds the room closed opens a new one).
func (r *seqRoom[E]) closeIfEmpty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.members) == 0 {
		r.closed = true
	}
	return r.closed
}

// replayLocked returns the frames after seq for an audience from the
// room's memory, or false when the memory does not reach back that far.
func (r *seqRoom[E]) replayLocked(after int, a Audience) ([][]byte, bool) {
	if after >= r.seq {
		return nil, true
	}
	if len(r.ring) == 0 || after < r.ring[0].seq-1 {
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
}

// joinLocked makes c a member, from afterSeq on, when nothing is left to
// queue on it first, and reports true. Otherwise it returns what catchUp
// must queue first, outside the room's lock.
func (r *seqRoom[E]) joinLocked(c *Conn, afterSeq int, player bool) (backlog, bool) {
	replay, ok := r.replayLocked(afterSeq, c.Audience)
	if !ok || len(replay) > 0 {
		return backlog{frames: replay, memory: ok, upTo: r.seq}, false
	}
	r.members[c] = &member{after: max(afterSeq, r.seq), player: player}
	if c.Audience == HTML {
		r.pages++
	}
	c.joined(r.key(), r.self) // under the room's lock, so that a kick cannot come between
	return backlog{}, true
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
