package live

import (
	"context"
	"encoding/json"
	"sync"

	"wager/domain"
)

// TournamentEvent is one stored event of a tournament's room.
type TournamentEvent struct {
	TournamentID string
	Seq          int
	Name         domain.EventName
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

// Tournaments are what the hub's tournament rooms read (joins, events)
// and render for pages through; both are required.
type Tournaments struct {
	Store TournamentStore
	Pages TournamentPages
}

// TournamentEventFrame is what an API socket receives for a tournament's
// event.
type TournamentEventFrame struct {
	Type         string           `json:"type" const:"event"`
	Event        domain.EventName `json:"event"`
	TournamentID string           `json:"tournamentId"`
	Seq          int              `json:"seq" minimum:"1" doc:"the event's number in its tournament: 1, 2, 3, ... without gaps"`
	Data         json.RawMessage  `json:"data" type:"object"`
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
// end), so its rooms are simpler than games': each renders each event
// once per audience outside its lock, from the events alone.
type tournamentRooms struct {
	store TournamentStore
	pages TournamentPages

	mu     sync.Mutex
	open   map[string]*tournamentRoom
	latest map[string]int
}

type tournamentRoom struct {
	seqRoom[TournamentEvent]
}

func newTournamentRooms(t Tournaments) *tournamentRooms {
	return &tournamentRooms{store: t.Store, pages: t.Pages, open: map[string]*tournamentRoom{}, latest: map[string]int{}}
}

// TournamentCommitted takes events of one tournament that this instance
// committed, in seq order.
func (h *Hub) TournamentCommitted(evs []TournamentEvent) {
	if len(evs) == 0 {
		return
	}
	r := h.tours.heardOf(evs[0].TournamentID, evs[len(evs)-1].Seq)
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.handLocked(evs) {
		h.goPump(func() { h.pumpTournament(r) })
	}
	r.mu.Unlock()
}

// TournamentAnnounced says that a tournament has events up to seq
// (another instance committed them).
func (h *Hub) TournamentAnnounced(id string, seq int) {
	if r := h.tours.heardOf(id, seq); r != nil {
		r.mu.Lock()
		if r.wantLocked(seq) {
			h.goPump(func() { h.pumpTournament(r) })
		}
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

// pumpTournament brings a room up to what it must reach, in seq order.
func (h *Hub) pumpTournament(r *tournamentRoom) {
	read := func(ctx context.Context, after, limit int) ([]TournamentEvent, error) {
		return h.tours.store.TournamentEvents(ctx, r.id, after, limit)
	}
	for {
		evs, ok := r.next(h, read)
		if !ok {
			return
		}
		r.mu.Lock()
		forPages := r.pages > 0
		r.mu.Unlock()
		frames := h.renderTournament(h.ctx, r.id, evs, forPages)
		r.mu.Lock()
		r.fanOutLocked(frames)
		r.mu.Unlock()
	}
}

func (h *Hub) renderTournament(ctx context.Context, id string, evs []TournamentEvent, forPages bool) []frame {
	frames := make([]frame, len(evs))
	var html [][]byte
	if forPages {
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

func (h *Hub) tournamentRoom(id string, known int) *tournamentRoom {
	t := h.tours
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.open[id]; r != nil {
		return r
	}
	r := &tournamentRoom{}
	r.init(r, id, true, known, mustJSON(TournamentResyncFrame{Type: "resync-tournament", TournamentID: id}))
	t.open[id] = r
	if latest := t.latest[id]; latest > known {
		r.mu.Lock()
		if r.wantLocked(latest) {
			h.goPump(func() { h.pumpTournament(r) })
		}
		r.mu.Unlock()
	}
	return r
}

// joinTournament answers a join-tournament: joined-tournament with the
// tournament (or resumed-tournament when lastSeq can be continued from),
// then every event after it.
func (h *Hub) joinTournament(ctx context.Context, c *Conn, m ClientMessage) {
	state, seq, err := h.tours.store.JoinTournament(ctx, m.TournamentID)
	if err != nil {
		c.reply(tournamentError(m.TournamentID, err))
		return
	}
	after, resumed := resumeAfter(c.Audience, m.LastSeq, seq)
	if resumed {
		c.reply(ResumedTournamentFrame{Type: "resumed-tournament", TournamentID: m.TournamentID, Seq: m.LastSeq})
	} else {
		c.reply(JoinedTournamentFrame{Type: "joined-tournament", TournamentID: m.TournamentID, Seq: seq, Tournament: state})
	}
	if err := h.enterTournament(ctx, c, m.TournamentID, after, seq); err != nil {
		h.log.Error("live: join a tournament's room", "tournament", m.TournamentID, "err", err)
		c.reply(tournamentError(m.TournamentID, err))
	}
}

func tournamentError(id string, err error) ErrorFrame {
	f := errorFrame("", err)
	f.TournamentID = id
	return f
}

// enterTournament adds a connection to a tournament's room and queues, in
// order, every event after afterSeq, then the live ones (as Join does for
// games).
func (h *Hub) enterTournament(ctx context.Context, c *Conn, id string, afterSeq, known int) error {
	read := func(ctx context.Context, after, limit int) ([]frame, error) {
		evs, err := h.tours.store.TournamentEvents(ctx, id, after, limit)
		if err != nil || len(evs) == 0 {
			return nil, err
		}
		return h.renderTournament(ctx, id, evs, c.Audience == HTML), nil
	}
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
		b, joined := r.joinLocked(c, afterSeq, false)
		r.mu.Unlock()
		if joined {
			return nil
		}
		var ok bool
		var err error
		if afterSeq, ok, err = h.catchUp(ctx, c, afterSeq, b, read); err != nil || !ok {
			return err
		}
	}
}

// LeaveTournament takes a connection out of a tournament's room.
func (h *Hub) LeaveTournament(c *Conn, id string) {
	if r := c.left(roomKey{tournament: true, id: id}); r != nil {
		r.leave(h, c)
	}
}

func (r *tournamentRoom) leave(h *Hub, c *Conn) {
	r.mu.Lock()
	r.removeLocked(c)
	empty := len(r.members) == 0
	r.mu.Unlock()
	if !empty {
		return
	}
	t := h.tours
	t.mu.Lock()
	if t.open[r.id] == r && r.closeIfEmpty() {
		delete(t.open, r.id)
	}
	t.mu.Unlock()
}

// sweepTournaments checks the open tournament rooms against the store,
// catching up those that missed an announcement, and forgets news of
// tournaments nobody here follows.
func (h *Hub) sweepTournaments(ctx context.Context) {
	t := h.tours
	t.mu.Lock()
	ids := make([]string, 0, len(t.open))
	for id, r := range t.open {
		if r.closeIfEmpty() { // its last member fell behind (see sweepGames)
			delete(t.open, id)
			continue
		}
		ids = append(ids, id)
	}
	for id := range t.latest {
		if t.open[id] == nil {
			delete(t.latest, id)
		}
	}
	t.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	seqs, err := t.store.TournamentSeqs(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("live: check tournament rooms for missed events", "err", err)
		}
		return
	}
	for id, seq := range seqs {
		h.TournamentAnnounced(id, seq)
	}
}
