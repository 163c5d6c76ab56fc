package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"wager/domain"
	"wager/e2e/apiclient"
)

// wsURL turns the API's base URL into the live socket's URL.
func wsURL(base string) string {
	switch {
	case strings.HasPrefix(base, "https://"):
		return "wss://" + strings.TrimPrefix(base, "https://") + "/ws"
	case strings.HasPrefix(base, "http://"):
		return "ws://" + strings.TrimPrefix(base, "http://") + "/ws"
	}
	return base + "/ws"
}

// serverFrame is the part of a server frame loadtest reads.
type serverFrame struct {
	Type   string           `json:"type"`
	Event  domain.EventName `json:"event"`
	GameID string           `json:"gameId"`
	Seq    int              `json:"seq"`
	Code   string           `json:"code"`
	State  struct {
		Seq int `json:"seq"`
	} `json:"state"`
}

// clientFrame is what loadtest sends on a socket.
type clientFrame struct {
	Type    string `json:"type"`
	GameID  string `json:"gameId"`
	LastSeq int    `json:"lastSeq,omitempty"`
}

// frameRecord is one event frame as received.
type frameRecord struct {
	at   time.Duration
	seq  int
	move bool // caused by a player's action (not a room event such as the spectator count)
}

// roomEvents are events that no player action causes.
var roomEvents = map[domain.EventName]bool{
	domain.EventSpectators: true, domain.EventChatMessage: true, domain.EventDonation: true,
	domain.EventPot: true, domain.EventBet: true, domain.EventMarket: true,
}

// membership is one socket's presence in one game's room.
type membership struct {
	game      *gameLog
	requested time.Duration // when join-game was first sent
	joinedAt  time.Duration // when the first "joined" arrived
	joinedCh  chan struct{} // closed on the first "joined" or a refusal
	joinSeq   int           // the state's seq in the first "joined"; -1 before
	refused   string        // the error code when the join was refused
	contig    int           // every seq up to this one has arrived
	ahead     map[int]bool  // seqs that arrived past a gap
	done      bool          // game:completed arrived
	frames    []frameRecord
}

// settled reports whether the join was answered either way.
func (m *membership) settled() bool { return m.joinSeq >= 0 || m.refused != "" }

// spectator is one live socket of a spectator user. It reads every frame,
// records event frames per game, rejoins with lastSeq on "resync", and
// reconnects and rejoins when the server closes it.
type spectator struct {
	r      *runner
	client *apiclient.Client

	wmu  sync.Mutex // one writer at a time
	mu   sync.Mutex // everything below
	conn *websocket.Conn

	games      map[string]*membership
	order      []*membership
	closing    bool
	resyncs    int
	reconnects int
	stray      int // event frames of games this socket never asked for
}

func newSpectator(r *runner, c *apiclient.Client) *spectator {
	return &spectator{r: r, client: c, games: map[string]*membership{}}
}

// dial opens a socket authenticated with the user's bearer token.
func (s *spectator) dial(ctx context.Context) (*websocket.Conn, error) {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+s.client.Token)
	h.Set("X-App-Id", s.client.AppID)
	h.Set("X-SDK-Version", apiclient.SDKVersion)
	conn, resp, err := s.r.ws.DialContext(ctx, wsURL(s.r.cfg.URL), h)
	if err != nil {
		if resp != nil {
			// Refused before the upgrade: the body is an API error.
			e := &apiclient.Error{Status: resp.StatusCode}
			json.NewDecoder(resp.Body).Decode(e)
			return nil, fmt.Errorf("opening the live socket: %w", e)
		}
		return nil, fmt.Errorf("opening the live socket: %w", err)
	}
	return conn, nil
}

// connect opens the socket and starts reading it.
func (s *spectator) connect(ctx context.Context) error {
	conn, err := s.dial(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	go s.read(ctx, conn)
	return nil
}

// send writes one message on the current connection.
func (s *spectator) send(f clientFrame) error {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn == nil {
		return errors.New("no connection")
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return conn.WriteJSON(f)
}

// join asks to follow a game and returns the membership, whose joinedCh
// closes when the server answers. A socket that is reconnecting sends the
// join when it is back.
func (s *spectator) join(g *gameLog) *membership {
	s.mu.Lock()
	m := s.games[g.id]
	if m != nil {
		s.mu.Unlock()
		return m
	}
	m = &membership{game: g, requested: now(), joinedCh: make(chan struct{}), joinSeq: -1}
	s.games[g.id] = m
	s.order = append(s.order, m)
	s.mu.Unlock()
	if err := s.send(clientFrame{Type: "join-game", GameID: g.id}); err != nil {
		s.r.errs.Add("ws send join-game: " + errorKind(err))
	}
	return m
}

// close ends the socket without reconnecting.
func (s *spectator) close() {
	s.mu.Lock()
	s.closing = true
	conn := s.conn
	s.mu.Unlock()
	if conn != nil {
		s.wmu.Lock()
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
			time.Now().Add(time.Second))
		s.wmu.Unlock()
		conn.Close()
	}
}

// read handles frames until the connection ends, then reconnects unless
// the run is over.
func (s *spectator) read(ctx context.Context, conn *websocket.Conn) {
	for {
		_, data, err := conn.ReadMessage()
		at := now()
		if err != nil {
			s.lost(ctx, conn, err)
			return
		}
		var f serverFrame
		if err := json.Unmarshal(data, &f); err != nil {
			s.r.errs.Add("ws frame not JSON")
			continue
		}
		switch f.Type {
		case "event":
			s.onEvent(f, at)
		case "joined":
			s.onJoined(f, at)
		case "resync":
			s.onResync(f)
		case "error":
			s.onError(f)
		}
	}
}

func (s *spectator) onEvent(f serverFrame, at time.Duration) {
	s.mu.Lock()
	m := s.games[f.GameID]
	if m == nil {
		s.stray++
		s.mu.Unlock()
		return
	}
	m.frames = append(m.frames, frameRecord{at: at, seq: f.Seq, move: !roomEvents[f.Event]})
	if m.joinSeq >= 0 {
		m.advance(f.Seq)
	}
	leave := f.Event == domain.EventGameCompleted && !m.done
	if leave {
		m.done = true
	}
	s.mu.Unlock()
	if leave {
		// A finished game's room has nothing more to say.
		if err := s.send(clientFrame{Type: "leave-game", GameID: f.GameID}); err != nil && !s.isClosing() {
			s.r.errs.Add("ws send leave-game: " + errorKind(err))
		}
	}
}

// advance notes that seq arrived.
func (m *membership) advance(seq int) {
	switch {
	case seq == m.contig+1:
		m.contig = seq
		for m.ahead[m.contig+1] {
			delete(m.ahead, m.contig+1)
			m.contig++
		}
	case seq > m.contig+1:
		if m.ahead == nil {
			m.ahead = map[int]bool{}
		}
		m.ahead[seq] = true
	}
}

func (s *spectator) onJoined(f serverFrame, at time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.games[f.GameID]
	if m == nil || m.joinSeq >= 0 {
		return // a rejoin: the replay follows
	}
	m.joinSeq, m.contig, m.joinedAt = f.State.Seq, f.State.Seq, at
	for _, fr := range m.frames { // frames that raced ahead of the answer
		if fr.seq > m.contig {
			m.advance(fr.seq)
		}
	}
	close(m.joinedCh)
}

func (s *spectator) onError(f serverFrame) {
	s.mu.Lock()
	m := s.games[f.GameID]
	first := m != nil && !m.settled()
	ended := m != nil && !first && f.Code == "GAME_NOT_ACTIVE"
	switch {
	case first:
		m.refused = f.Code
		close(m.joinedCh)
	case ended:
		m.done = true // a rejoin found the game over: nothing more will come
	}
	s.mu.Unlock()
	if ended {
		return
	}
	if first {
		// A game that ended before the join arrived is no server error:
		// the membership counts as refused.
		if f.Code != "GAME_NOT_ACTIVE" {
			s.r.errs.Add("ws join-game refused: " + f.Code)
		}
		return
	}
	s.r.errs.Add("ws error frame: " + f.Code)
}

// onResync rejoins a game from the last seq that arrived without a gap.
func (s *spectator) onResync(f serverFrame) {
	s.mu.Lock()
	s.resyncs++
	m := s.games[f.GameID]
	var last int
	if m != nil {
		last = m.contig
	}
	s.mu.Unlock()
	if m == nil {
		return
	}
	if err := s.send(clientFrame{Type: "join-game", GameID: f.GameID, LastSeq: last}); err != nil {
		s.r.errs.Add("ws send rejoin: " + errorKind(err))
	}
}

func (s *spectator) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// lost handles the end of a connection: unless the run closed it, it is
// counted, and the socket reconnects and rejoins its games where they
// stopped, like a real client.
func (s *spectator) lost(ctx context.Context, conn *websocket.Conn, err error) {
	conn.Close()
	if s.isClosing() || ctx.Err() != nil {
		return
	}
	kind := "ws closed: " + errorKind(err)
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		kind = fmt.Sprintf("ws closed by server: %d %s", ce.Code, ce.Text)
	}
	s.r.errs.Add(kind)
	backoff := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt == 5 || s.isClosing() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff *= 2
		next, err := s.dial(ctx)
		if err != nil {
			s.r.errs.Add("ws reconnect: " + errorKind(err))
			continue
		}
		s.mu.Lock()
		s.conn = next
		s.reconnects++
		var rejoin []clientFrame
		for _, m := range s.order {
			switch {
			case m.done || m.refused != "":
			case m.joinSeq >= 0:
				rejoin = append(rejoin, clientFrame{Type: "join-game", GameID: m.game.id, LastSeq: m.contig})
			default:
				rejoin = append(rejoin, clientFrame{Type: "join-game", GameID: m.game.id})
			}
		}
		s.mu.Unlock()
		for _, f := range rejoin {
			if err := s.send(f); err != nil {
				s.r.errs.Add("ws send rejoin: " + errorKind(err))
			}
		}
		go s.read(ctx, next)
		return
	}
}
