package live

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"wager/domain"
)

// TournamentEvent is one stored event of a tournament's room.
type TournamentEvent struct {
	TournamentID string
	Seq          int
	Name         string
	Data         json.RawMessage
}

// TournamentStore reads what tournament rooms need: the tournament as a
// join answers it, the events a room missed, and the rooms' positions for
// the periodic check.
type TournamentStore interface {
	// JoinTournament returns the tournament as GET /tournaments/:id
	// answers it and the seq of the last event it reflects (NOT_FOUND).
	JoinTournament(ctx context.Context, id string) (json.RawMessage, int, error)
	TournamentEvents(ctx context.Context, id string, after, limit int) ([]TournamentEvent, error)
	TournamentSeqs(ctx context.Context, ids []string) (map[string]int, error)
}

// TournamentPages renders tournament events for browser pages: one
// fragment per event, nil where a page shows nothing of it. It renders
// from the events alone.
type TournamentPages interface {
	TournamentEvents(ctx context.Context, id string, evs []TournamentEvent) [][]byte
}

// TournamentEventFrame is what an API socket receives for a tournament's
// event.
type TournamentEventFrame struct {
	Type         string          `json:"type" const:"event"`
	Event        string          `json:"event"`
	TournamentID string          `json:"tournamentId"`
	Seq          int             `json:"seq" minimum:"1" doc:"the event's number in its tournament: 1, 2, 3, ... without gaps"`
	Data         json.RawMessage `json:"data" type:"object"`
}

// JoinedTournamentFrame answers join-tournament: the tournament as of the
// event numbered seq; only events after seq follow.
type JoinedTournamentFrame struct {
	Type         string          `json:"type" const:"joined-tournament"`
	TournamentID string          `json:"tournamentId"`
	Seq          int             `json:"seq" minimum:"0" doc:"the seq of the last event the tournament reflects: the events that follow have higher seqs"`
	Tournament   json.RawMessage `json:"tournament" schema:"TournamentDetail" doc:"the same as GET /tournaments/:id"`
}

// ResumedTournamentFrame answers a join-tournament whose lastSeq the room
// can continue from: exactly the events after seq follow.
type ResumedTournamentFrame struct {
	Type         string `json:"type" const:"resumed-tournament"`
	TournamentID string `json:"tournamentId"`
	Seq          int    `json:"seq" minimum:"1" doc:"the lastSeq of the join: the next event is seq + 1"`
}

// TournamentResyncFrame tells a socket that fell behind in a tournament's
// room that it left it: it joins again with the last seq it has.
type TournamentResyncFrame struct {
	Type         string `json:"type" const:"resync-tournament"`
	TournamentID string `json:"tournamentId"`
}

// LeftTournamentFrame answers leave-tournament.
type LeftTournamentFrame struct {
	Type         string `json:"type" const:"left-tournament"`
	TournamentID string `json:"tournamentId"`
}

// tournamentRooms are the hub's tournament rooms. A tournament's events
// are few (standings at most once a second, pairings, the start and the
// end), so its rooms are simpler than games': each keeps its recent
// frames, renders each event once per audience outside its lock, and
// reads what it missed by seq.
type tournamentRooms struct {
	store TournamentStore
	pages TournamentPages

	mu     sync.Mutex
	open   map[string]*tournamentRoom
	latest map[string]int
	conns  map[*Conn]map[string]*tournamentRoom
}

type tournamentRoom struct {
	id string

	mu      sync.Mutex
	seq     int // last event fanned out
	want    int // newest seq known to exist
	pending map[int]TournamentEvent
	pumping bool
	closed  bool
	ring    []frame
	members map[*Conn]int // the last seq each member has
	pages   int
}

// ServeTournaments gives the hub its tournament rooms: joins, events and
// their pages' rendering come through store and pages. Until it is
// called, join-tournament answers NOT_FOUND.
func (h *Hub) ServeTournaments(store TournamentStore, pages TournamentPages) {
	h.tours = &tournamentRooms{store: store, pages: pages, open: map[string]*tournamentRoom{}, latest: map[string]int{},
		conns: map[*Conn]map[string]*tournamentRoom{}}
}

// TournamentCommitted takes events of one tournament that this instance
// committed, in seq order.
func (h *Hub) TournamentCommitted(evs []TournamentEvent) {
	if h.tours == nil || len(evs) == 0 {
		return
	}
	r := h.tours.heardOf(evs[0].TournamentID, evs[len(evs)-1].Seq)
	if r == nil {
		return
	}
	r.mu.Lock()
	for _, e := range evs {
		if e.Seq > r.seq {
			r.pending[e.Seq] = e
		}
	}
	h.wantTournamentLocked(r, evs[len(evs)-1].Seq)
	r.mu.Unlock()
}

// TournamentAnnounced says that a tournament has events up to seq
// (another instance committed them).
func (h *Hub) TournamentAnnounced(id string, seq int) {
	if h.tours == nil {
		return
	}
	if r := h.tours.heardOf(id, seq); r != nil {
		r.mu.Lock()
		h.wantTournamentLocked(r, seq)
		r.mu.Unlock()
	}
}

func (t *tournamentRooms) heardOf(id string, seq int) *tournamentRoom {
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq > t.latest[id] {
		t.latest[id] = seq
	}
	return t.open[id]
}

func (h *Hub) wantTournamentLocked(r *tournamentRoom, seq int) {
	if seq > r.want {
		r.want = seq
	}
	if r.want > r.seq && !r.pumping && !r.closed {
		r.pumping = true
		go h.pumpTournament(r)
	}
}

// pumpTournament brings a room up to what it must reach, in seq order.
func (h *Hub) pumpTournament(r *tournamentRoom) {
	t := h.tours
	backoff := 50 * time.Millisecond
	for {
		r.mu.Lock()
		if r.seq >= r.want || r.closed {
			r.pumping = false
			r.mu.Unlock()
			return
		}
		from, to := r.seq, r.want
		var evs []TournamentEvent
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
		forPages := r.pages > 0
		r.mu.Unlock()
		if len(evs) < to-from {
			got, err := t.store.TournamentEvents(h.ctx, r.id, from, min(to-from, fetchLimit))
			if err != nil || len(got) == 0 {
				if h.ctx.Err() != nil {
					r.mu.Lock()
					r.pumping = false
					r.mu.Unlock()
					return
				}
				h.log.Warn("live: read missed tournament events", "tournament", r.id, "after", from, "err", err)
				time.Sleep(backoff)
				backoff = min(2*backoff, 2*time.Second)
				continue
			}
			evs = got
		}
		frames := h.renderTournament(h.ctx, r.id, evs, forPages)
		r.mu.Lock()
		h.fanOutTournamentLocked(r, frames)
		r.mu.Unlock()
	}
}

func (h *Hub) renderTournament(ctx context.Context, id string, evs []TournamentEvent, forPages bool) []frame {
	frames := make([]frame, len(evs))
	var html [][]byte
	if forPages && h.tours.pages != nil {
		html = h.tours.pages.TournamentEvents(ctx, id, evs)
	}
	for i, e := range evs {
		frames[i] = frame{seq: e.Seq, html: forPages}
		frames[i].bytes[JSON] = mustJSON(TournamentEventFrame{Type: "event", Event: e.Name, TournamentID: id, Seq: e.Seq, Data: e.Data})
		if i < len(html) {
			frames[i].bytes[HTML] = html[i]
		}
	}
	return frames
}

func (h *Hub) fanOutTournamentLocked(r *tournamentRoom, frames []frame) {
	for _, f := range frames {
		if f.seq <= r.seq {
			continue
		}
		for c, after := range r.members {
			if f.seq <= after {
				continue
			}
			if c.Audience == HTML && !f.html {
				h.kickTournamentLocked(r, c)
				continue
			}
			if b := f.bytes[c.Audience]; b != nil && !c.deliver(b) {
				h.kickTournamentLocked(r, c)
				continue
			}
			r.members[c] = f.seq
		}
		r.seq = f.seq
		if len(r.ring) == ringLen {
			copy(r.ring, r.ring[1:])
			r.ring = r.ring[:ringLen-1]
		}
		r.ring = append(r.ring, f)
	}
}

func (h *Hub) kickTournamentLocked(r *tournamentRoom, c *Conn) {
	h.removeTournamentLocked(r, c)
	c.urgent(mustJSON(TournamentResyncFrame{Type: "resync-tournament", TournamentID: r.id}))
}

func (h *Hub) removeTournamentLocked(r *tournamentRoom, c *Conn) {
	if _, ok := r.members[c]; !ok {
		return
	}
	delete(r.members, c)
	if c.Audience == HTML {
		r.pages--
	}
}

func (r *tournamentRoom) replayLocked(after int, a Audience) ([][]byte, bool) {
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

func (h *Hub) tournamentRoom(id string, known int) *tournamentRoom {
	t := h.tours
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.open[id]; r != nil {
		return r
	}
	r := &tournamentRoom{id: id, seq: known, pending: map[int]TournamentEvent{}, members: map[*Conn]int{}}
	t.open[id] = r
	if latest := t.latest[id]; latest > known {
		r.mu.Lock()
		h.wantTournamentLocked(r, latest)
		r.mu.Unlock()
	}
	return r
}

// joinTournament answers a join-tournament: joined-tournament with the
// tournament (or resumed-tournament when lastSeq can be continued from),
// then every event after it.
func (h *Hub) joinTournament(ctx context.Context, c *Conn, m ClientMessage) {
	if h.tours == nil {
		c.reply(ErrorFrame{Type: "error", Code: domain.CodeNotFound, TournamentID: m.TournamentID, Message: "no such tournament"})
		return
	}
	state, seq, err := h.tours.store.JoinTournament(ctx, m.TournamentID)
	if err != nil {
		c.reply(tournamentError(m.TournamentID, err))
		return
	}
	after := seq
	switch {
	case c.Audience == HTML && m.LastSeq > 0:
		after = m.LastSeq
	case m.LastSeq > 0 && m.LastSeq <= seq && seq-m.LastSeq <= MaxResume:
		after = m.LastSeq
		c.reply(ResumedTournamentFrame{Type: "resumed-tournament", TournamentID: m.TournamentID, Seq: m.LastSeq})
	default:
		c.reply(JoinedTournamentFrame{Type: "joined-tournament", TournamentID: m.TournamentID, Seq: seq, Tournament: state})
	}
	if err := h.enterTournament(ctx, c, m.TournamentID, after, seq); err != nil {
		h.log.Error("live: join a tournament's room", "tournament", m.TournamentID, "err", err)
		c.reply(tournamentError(m.TournamentID, err))
	}
}

func tournamentError(id string, err error) ErrorFrame {
	var e *domain.Error
	if errors.As(err, &e) {
		return ErrorFrame{Type: "error", Code: e.Code, TournamentID: id, Message: e.Message}
	}
	return ErrorFrame{Type: "error", Code: domain.CodeInternal, TournamentID: id, Message: "something went wrong; try again"}
}

// enterTournament adds a connection to a tournament's room and queues, in
// order, every event after afterSeq, then the live ones (as Join does for
// games).
func (h *Hub) enterTournament(ctx context.Context, c *Conn, id string, afterSeq, known int) error {
	for {
		r := h.tournamentRoom(id, known)
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			continue
		}
		if _, in := r.members[c]; in {
			r.mu.Unlock()
			return nil
		}
		replay, ok := r.replayLocked(afterSeq, c.Audience)
		if ok && len(replay) == 0 {
			r.members[c] = max(afterSeq, r.seq)
			if c.Audience == HTML {
				r.pages++
			}
			h.tours.mu.Lock()
			if h.tours.conns[c] == nil {
				h.tours.conns[c] = map[string]*tournamentRoom{}
			}
			h.tours.conns[c][id] = r
			h.tours.mu.Unlock()
			r.mu.Unlock()
			return nil
		}
		upTo := r.seq
		r.mu.Unlock()
		if ok {
			for _, b := range replay {
				if !c.push(b, h.writeWait) {
					return nil
				}
			}
			afterSeq = upTo
			continue
		}
		for afterSeq < upTo {
			evs, err := h.tours.store.TournamentEvents(ctx, id, afterSeq, min(upTo-afterSeq, fetchLimit))
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				break
			}
			for _, f := range h.renderTournament(ctx, id, evs, c.Audience == HTML) {
				if b := f.bytes[c.Audience]; b != nil && !c.push(b, h.writeWait) {
					return nil
				}
			}
			afterSeq = evs[len(evs)-1].Seq
		}
	}
}

// LeaveTournament takes a connection out of a tournament's room.
func (h *Hub) LeaveTournament(c *Conn, id string) {
	if h.tours == nil {
		return
	}
	t := h.tours
	t.mu.Lock()
	r := t.conns[c][id]
	delete(t.conns[c], id)
	if len(t.conns[c]) == 0 {
		delete(t.conns, c)
	}
	t.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	h.removeTournamentLocked(r, c)
	empty := len(r.members) == 0
	r.mu.Unlock()
	if !empty {
		return
	}
	t.mu.Lock()
	r.mu.Lock()
	if len(r.members) == 0 && t.open[r.id] == r {
		r.closed = true
		delete(t.open, r.id)
	}
	r.mu.Unlock()
	t.mu.Unlock()
}

// leaveTournaments takes a closing connection out of every tournament
// room.
func (h *Hub) leaveTournaments(c *Conn) {
	if h.tours == nil {
		return
	}
	h.tours.mu.Lock()
	var ids []string
	for id := range h.tours.conns[c] {
		ids = append(ids, id)
	}
	h.tours.mu.Unlock()
	for _, id := range ids {
		h.LeaveTournament(c, id)
	}
}

// RunTournaments checks the open tournament rooms against the store every
// interval until ctx is done, catching up those that missed an
// announcement, and forgets news of tournaments nobody here follows.
func (h *Hub) RunTournaments(ctx context.Context, interval time.Duration) {
	if h.tours == nil {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t := h.tours
		t.mu.Lock()
		ids := make([]string, 0, len(t.open))
		for id := range t.open {
			ids = append(ids, id)
		}
		for id := range t.latest {
			if t.open[id] == nil {
				delete(t.latest, id)
			}
		}
		t.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		seqs, err := t.store.TournamentSeqs(ctx, ids)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("live: check tournament rooms for missed events", "err", err)
			}
			continue
		}
		for id, seq := range seqs {
			h.TournamentAnnounced(id, seq)
		}
	}
}
