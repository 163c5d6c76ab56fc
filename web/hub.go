package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"wager/domain/game"
)

// sendBuffer is how many frames a subscriber may fall behind before it is
// dropped: a slow client never stalls a room.
const sendBuffer = 256

// Audience is a kind of subscriber that gets its own rendering of events.
type Audience int

// Audiences.
const (
	AudienceJSON Audience = iota // API sockets: JSON envelopes
	AudienceHTML                 // browser pages: HTML fragments for htmx
)

// Renderer turns one game event into the bytes an audience receives (nil:
// nothing to send).
type Renderer func(ctx context.Context, ev game.Event) []byte

// Subscriber is one live connection: the hub writes frames to Send and
// closes Done when it drops the subscriber.
type Subscriber struct {
	UserID   string
	Audience Audience
	Send     chan []byte

	once   sync.Once
	Done   chan struct{}
	after  map[string]int  // per game: the last seq this subscriber has
	player map[string]bool // per game: whether it plays there
}

// NewSubscriber returns a subscriber for a user.
func NewSubscriber(userID string, a Audience) *Subscriber {
	return &Subscriber{UserID: userID, Audience: a, Send: make(chan []byte, sendBuffer), Done: make(chan struct{}),
		after: map[string]int{}, player: map[string]bool{}}
}

// Close drops the subscriber (idempotent).
func (s *Subscriber) Close() { s.once.Do(func() { close(s.Done) }) }

// Deliver queues a frame without blocking; a full queue drops the
// subscriber. It reports whether the frame was queued.
func (s *Subscriber) Deliver(frame []byte) bool {
	select {
	case <-s.Done:
		return false
	default:
	}
	select {
	case s.Send <- frame:
		return true
	default:
		s.Close()
		return false
	}
}

type room struct {
	lastSeq int
	subs    map[*Subscriber]bool
}

// Hub is one instance's fan-out of game events and personal notices to
// its live connections. Every game event is a database row; the hub learns
// of new rows by NOTIFY, reads them once per room, renders each once per
// audience and sends the same bytes to every subscriber. One goroutine
// does all of it, so each subscriber sees a game's events in seq order,
// replayed ones first.
type Hub struct {
	games      *game.Service
	log        *slog.Logger
	instanceID string
	renderers  map[Audience]Renderer

	ops   chan func(context.Context)
	rooms map[string]*room
	users map[string]map[*Subscriber]bool
}

// NewHub returns a hub; Run starts it.
func NewHub(games *game.Service, instanceID string, log *slog.Logger) *Hub {
	h := &Hub{games: games, log: log, instanceID: instanceID, ops: make(chan func(context.Context), 1024),
		rooms: map[string]*room{}, users: map[string]map[*Subscriber]bool{}}
	h.renderers = map[Audience]Renderer{AudienceJSON: renderJSON}
	return h
}

// SetRenderer sets how an audience sees events (before Run).
func (h *Hub) SetRenderer(a Audience, r Renderer) { h.renderers[a] = r }

// Run processes the hub's work until ctx is done.
func (h *Hub) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case op := <-h.ops:
			op(ctx)
		}
	}
}

func (h *Hub) do(op func(context.Context)) { h.ops <- op }

// EventFrame is what an API socket receives for a game event.
type EventFrame struct {
	Type   string          `json:"type"`
	Event  string          `json:"event"`
	GameID string          `json:"gameId"`
	Seq    int             `json:"seq"`
	Data   json.RawMessage `json:"data"`
}

func renderJSON(_ context.Context, ev game.Event) []byte {
	b, _ := json.Marshal(EventFrame{Type: "event", Event: ev.Name, GameID: ev.GameID, Seq: ev.Seq, Data: ev.Data})
	return b
}

// Connect registers a subscriber for its user's personal notices.
func (h *Hub) Connect(s *Subscriber) {
	h.do(func(context.Context) {
		if h.users[s.UserID] == nil {
			h.users[s.UserID] = map[*Subscriber]bool{}
		}
		h.users[s.UserID][s] = true
	})
}

// Disconnect removes a subscriber from its rooms and its user channel.
func (h *Hub) Disconnect(s *Subscriber) {
	s.Close()
	h.do(func(ctx context.Context) {
		delete(h.users[s.UserID], s)
		if len(h.users[s.UserID]) == 0 {
			delete(h.users, s.UserID)
		}
		for gameID := range s.after {
			h.leave(ctx, s, gameID)
		}
	})
}

// Join adds a subscriber to a game's room: first the frames of joined
// (sent by the caller's callback, in order), then every event after
// afterSeq, then live events. isPlayer decides whether it counts as a
// spectator.
func (h *Hub) Join(s *Subscriber, gameID string, afterSeq int, isPlayer bool, joined []byte) {
	h.do(func(ctx context.Context) {
		if _, in := s.after[gameID]; in {
			return
		}
		r := h.rooms[gameID]
		if r == nil {
			meta, err := h.games.Metadata(ctx, gameID)
			if err != nil {
				h.log.Error("hub: open room", "game", gameID, "err", err)
				return
			}
			r = &room{lastSeq: meta.LastSeq, subs: map[*Subscriber]bool{}}
			h.rooms[gameID] = r
		}
		if joined != nil && !s.Deliver(joined) {
			return
		}
		// Replay what the subscriber missed, up to the room's position.
		for after := afterSeq; after < r.lastSeq; {
			evs, err := h.games.Events(ctx, gameID, after, 500)
			if err != nil || len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				if ev.Seq > r.lastSeq {
					break
				}
				if f := h.renderers[s.Audience](ctx, ev); f != nil && !s.Deliver(f) {
					return
				}
				after = ev.Seq
			}
		}
		s.after[gameID] = r.lastSeq
		s.player[gameID] = isPlayer
		r.subs[s] = true
		h.countViewers(ctx, gameID, r)
	})
}

// Leave removes a subscriber from a game's room.
func (h *Hub) Leave(s *Subscriber, gameID string) {
	h.do(func(ctx context.Context) { h.leave(ctx, s, gameID) })
}

func (h *Hub) leave(ctx context.Context, s *Subscriber, gameID string) {
	r := h.rooms[gameID]
	delete(s.after, gameID)
	delete(s.player, gameID)
	if r == nil || !r.subs[s] {
		return
	}
	delete(r.subs, s)
	h.countViewers(ctx, gameID, r)
	if len(r.subs) == 0 {
		delete(h.rooms, gameID)
	}
}

// countViewers publishes this instance's number of distinct spectators.
func (h *Hub) countViewers(ctx context.Context, gameID string, r *room) {
	users := map[string]bool{}
	for s := range r.subs {
		if !s.player[gameID] {
			users[s.UserID] = true
		}
	}
	if err := h.games.SetViewers(ctx, gameID, h.instanceID, len(users)); err != nil {
		h.log.Warn("hub: count spectators", "game", gameID, "err", err)
	}
}

// GameChanged is called for every NOTIFY of new events of a game: the
// room reads them once and fans them out.
func (h *Hub) GameChanged(gameID string) {
	h.do(func(ctx context.Context) {
		r := h.rooms[gameID]
		if r == nil {
			return
		}
		evs, err := h.games.Events(ctx, gameID, r.lastSeq, 500)
		if err != nil {
			h.log.Error("hub: read events", "game", gameID, "err", err)
			return
		}
		for _, ev := range evs {
			h.broadcast(ctx, r, ev)
			r.lastSeq = ev.Seq
		}
		if len(evs) == 500 {
			go h.GameChanged(gameID) // more to read, after this batch
		}
	})
}

// broadcast renders ev once per audience and queues the same bytes for
// every subscriber of the room that does not have it yet.
func (h *Hub) broadcast(ctx context.Context, r *room, ev game.Event) {
	frames := map[Audience][]byte{}
	for s := range r.subs {
		if s.after[ev.GameID] >= ev.Seq {
			continue
		}
		f, ok := frames[s.Audience]
		if !ok {
			f = h.renderers[s.Audience](ctx, ev)
			frames[s.Audience] = f
		}
		if f != nil && !s.Deliver(f) {
			delete(r.subs, s) // dropped: too slow
			continue
		}
		s.after[ev.GameID] = ev.Seq
	}
}

// Notify delivers a personal notice (a JSON payload) to a user's sockets.
func (h *Hub) Notify(userID string, frame []byte) {
	h.do(func(context.Context) {
		for s := range h.users[userID] {
			s.Deliver(frame)
		}
	})
}

// Refresh keeps this instance's spectator counts alive.
func (h *Hub) Refresh(ctx context.Context) error {
	return h.games.RefreshViewers(ctx, h.instanceID)
}
