package wager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"wager/sdk/api"
)

// Event names the client gives meaning to.
const (
	// EventJoined is the first event of FollowGame: Data is the game's
	// state when following began (as GET /games/:id/state) and Seq the
	// seq of that state; the events that follow have higher seqs.
	EventJoined = "joined"
	// EventSpectators is the spectator count (*Spectators). It is
	// presence, not a stored event: it has no seq (Seq is 0), it may
	// repeat, and it is not replayed after a reconnect.
	EventSpectators = "game:spectators"
	// EventCompleted ends a game; the channel closes after it.
	EventCompleted = "game:completed"
)

// Event is one event of a followed game (API.md "Real-time events").
type Event struct {
	GameID string
	// Seq numbers the game's events from 1, without gaps.
	Seq int64
	// Name is the event's name, e.g. game:rps:round:reveal.
	Name string
	// Data is the event's payload; its shape depends on Name.
	Data json.RawMessage
}

// Follow is a game followed live. Events delivers every event of the game
// after the one FollowGame started from, each once and in seq order,
// across reconnects; it closes after game:completed, when the context
// ends, or on an error that reconnecting cannot cure (then Err says
// which).
type Follow struct {
	Events <-chan Event

	c      *Client
	gameID string
	out    chan Event
	last   int64 // the seq of the last event delivered

	mu         sync.Mutex
	err        error
	reconnects int
}

// Err returns why Events closed early: nil after game:completed or when
// the context ended, else the error.
func (f *Follow) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Reconnects returns how many times the socket was opened again.
func (f *Follow) Reconnects() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reconnects
}

// frame is any frame of the socket, as far as following a game needs.
type frame struct {
	Type    string          `json:"type"`
	Event   string          `json:"event"`
	GameID  string          `json:"gameId"`
	Seq     int64           `json:"seq"`
	Data    json.RawMessage `json:"data"`
	State   json.RawMessage `json:"state"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
}

// FollowGame opens the live socket (/ws), joins the game and returns its
// events; the first is EventJoined with the state. After a disconnect it
// reconnects and rejoins from the last seq it delivered, so that no event
// is lost or repeated; told to resync, it rejoins the same way. It needs a
// signed-in client (a wallet or a token). It returns the API's error when
// the socket is refused or the join fails (*APIError with NOT_FOUND or
// GAME_NOT_ACTIVE).
func (c *Client) FollowGame(ctx context.Context, gameID string) (*Follow, error) {
	out := make(chan Event, 256)
	f := &Follow{Events: out, c: c, gameID: gameID, out: out}
	conn, joined, err := f.connect(ctx, 0)
	if err != nil {
		return nil, err
	}
	f.last = joined.Seq // the state's: only later events follow
	out <- Event{GameID: gameID, Seq: joined.Seq, Name: EventJoined, Data: joined.State}
	go f.run(ctx, conn)
	return f, nil
}

// wsURL is the socket's address.
func (c *Client) wsURL() string {
	return "ws" + strings.TrimPrefix(c.baseURL, "http") + "/ws"
}

// connect opens a socket, joins the game after seq last and waits for the
// answer: resumed (the events after last follow), joined (the state as of
// its seq, then the events after it), or the refusal as an *APIError.
func (f *Follow) connect(ctx context.Context, last int64) (*websocket.Conn, frame, error) {
	c := f.c
	token, err := c.validToken(ctx)
	if err != nil {
		return nil, frame{}, err
	}
	conn, err := c.dial(ctx, token)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && c.wallet != nil {
		if token, err = c.renew(ctx, token); err != nil {
			return nil, frame{}, err
		}
		conn, err = c.dial(ctx, token)
	}
	if err != nil {
		return nil, frame{}, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := conn.WriteJSON(map[string]any{"type": "join-game", "gameId": f.gameID, "lastSeq": last}); err != nil {
		conn.Close()
		return nil, frame{}, err
	}
	for {
		var fr frame
		if err := conn.ReadJSON(&fr); err != nil {
			conn.Close()
			if ctx.Err() != nil {
				return nil, frame{}, ctx.Err()
			}
			return nil, frame{}, fmt.Errorf("wager: joining game %s: %w", f.gameID, err)
		}
		switch fr.Type {
		case "joined", "resumed":
			return conn, fr, nil
		case "error":
			conn.Close()
			return nil, frame{}, &APIError{Status: statusOf(fr.Code), Code: fr.Code, Message: fr.Message}
		}
	}
}

// statusOf is the HTTP status of a socket error code.
func statusOf(code string) int {
	switch code {
	case "NOT_FOUND":
		return http.StatusNotFound
	case "GAME_NOT_ACTIVE", "CONFLICT":
		return http.StatusConflict
	case "FORBIDDEN":
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// dial opens the socket with the client's headers and token; a refused
// upgrade is the API's error.
func (c *Client) dial(ctx context.Context, token string) (*websocket.Conn, error) {
	h := http.Header{}
	h.Set("X-SDK-Version", Version)
	h.Set("X-App-Id", c.appID)
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	conn, resp, err := c.dialer.DialContext(ctx, c.wsURL(), h)
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			return nil, apiError(resp, body)
		}
		return nil, fmt.Errorf("wager: opening the live socket: %w", err)
	}
	return conn, nil
}

// pongWait is how long a socket may stay silent: the server pings every
// 25 seconds.
const pongWait = 60 * time.Second

// run reads the socket until the game completes or ctx ends, reconnecting
// after every disconnect.
func (f *Follow) run(ctx context.Context, conn *websocket.Conn) {
	defer close(f.out)
	for {
		done := f.read(ctx, conn)
		conn.Close()
		if done || ctx.Err() != nil {
			return
		}
		conn = f.reconnect(ctx)
		if conn == nil {
			return
		}
	}
}

// reconnect opens the socket again and rejoins after the last seq,
// waiting longer after each failure. It returns nil when following is
// over: ctx ended, or the game is no longer active (its events up to the
// end are then read over HTTP).
func (f *Follow) reconnect(ctx context.Context) *websocket.Conn {
	wait := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		conn, fr, err := f.connect(ctx, f.last)
		if err == nil {
			f.mu.Lock()
			f.reconnects++
			f.mu.Unlock()
			if err := f.bridge(ctx, fr); err != nil {
				conn.Close()
				if err != errCompleted && ctx.Err() == nil {
					f.fail(err)
				}
				return nil
			}
			return conn
		}
		var ae *APIError
		if errors.As(err, &ae) && (ae.Code == "GAME_NOT_ACTIVE" || ae.Code == "NOT_FOUND") {
			f.finish(ctx)
			return nil
		}
		var up *UpgradeRequiredError
		if errors.As(err, &up) || (errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden)) {
			f.fail(err)
			return nil
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func (f *Follow) fail(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// errCompleted stops reading after game:completed.
var errCompleted = errors.New("game completed")

// read delivers the socket's events until it breaks (false: reconnect),
// or following is over (true): the game completed, ctx ended, or an error
// that Err reports.
func (f *Follow) read(ctx context.Context, conn *websocket.Conn) (done bool) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPingHandler(func(data string) error {
		conn.SetReadDeadline(time.Now().Add(pongWait))
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
	})
	for {
		var fr frame
		if err := conn.ReadJSON(&fr); err != nil {
			return ctx.Err() != nil
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
		if fr.GameID != "" && !strings.EqualFold(fr.GameID, f.gameID) {
			continue
		}
		switch fr.Type {
		case "event":
			if err := f.deliver(ctx, fr); err != nil {
				if err != errCompleted && ctx.Err() == nil {
					f.fail(err)
				}
				return true
			}
		case "joined":
			// The answer to a rejoin whose gap was too long to replay.
			if err := f.bridge(ctx, fr); err != nil {
				if err != errCompleted && ctx.Err() == nil {
					f.fail(err)
				}
				return true
			}
		case "resync":
			// Left the room: rejoin after the last seq on the same socket.
			if err := conn.WriteJSON(map[string]any{"type": "join-game", "gameId": f.gameID, "lastSeq": f.last}); err != nil {
				return false
			}
		case "error":
			if fr.Code == "GAME_NOT_ACTIVE" || fr.Code == "NOT_FOUND" {
				// A rejoin after the game ended: the rest is on record.
				f.finish(ctx)
				return true
			}
		}
	}
}

// deliver passes one event frame on, dropping one already delivered and
// reading over HTTP any that a gap before it would lose. It returns an
// error when following is over.
func (f *Follow) deliver(ctx context.Context, fr frame) error {
	ev := Event{GameID: f.gameID, Seq: fr.Seq, Name: fr.Event, Data: fr.Data}
	if ev.Name == EventSpectators {
		return f.send(ctx, ev) // presence: its seq is not its own
	}
	if ev.Seq <= f.last {
		return nil
	}
	if ev.Seq > f.last+1 {
		if err := f.catchUp(ctx, ev.Seq-1); err != nil {
			return err
		}
	}
	if err := f.send(ctx, ev); err != nil {
		return err
	}
	f.last = ev.Seq
	if ev.Name == EventCompleted {
		return errCompleted
	}
	return nil
}

func (f *Follow) send(ctx context.Context, ev Event) error {
	select {
	case f.out <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// catchUp delivers the recorded events after the last one delivered, up
// to seq upTo (0: all of them), from GET /games/:id/events. It returns
// errCompleted when it delivered game:completed.
func (f *Follow) catchUp(ctx context.Context, upTo int64) error {
	id, err := gameUUID(f.gameID)
	if err != nil {
		return err
	}
	for upTo == 0 || f.last < upTo {
		after := f.last
		r, err := f.c.API.GetGamesByIdEventsWithResponse(ctx, id, &api.GetGamesByIdEventsParams{After: &after})
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return nil
		}
		for _, e := range r.JSON200.Events {
			if e.Seq != f.last+1 || (upTo != 0 && e.Seq > upTo) {
				continue
			}
			data, err := json.Marshal(e.Data)
			if err != nil {
				return err
			}
			if err := f.send(ctx, Event{GameID: f.gameID, Seq: e.Seq, Name: e.Event, Data: data}); err != nil {
				return err
			}
			f.last = e.Seq
			if e.Event == EventCompleted {
				return errCompleted
			}
		}
		if f.last == after {
			return nil // nothing more on record
		}
	}
	return nil
}

// bridge reads over HTTP the events between the last one delivered and a
// joined frame's state, which the socket does not replay.
func (f *Follow) bridge(ctx context.Context, fr frame) error {
	if fr.Type != "joined" || fr.Seq <= f.last {
		return nil
	}
	return f.catchUp(ctx, fr.Seq)
}

// finish reads the rest of a game that is no longer active from its
// record, and notes an error that stopped it.
func (f *Follow) finish(ctx context.Context) {
	if err := f.catchUp(ctx, 0); err != nil && err != errCompleted && ctx.Err() == nil {
		f.fail(err)
	}
}
