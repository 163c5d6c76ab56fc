package wager

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"wager.example.com/sdk/api"
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
	// Ahead marks a chat message, donation or pot of a game you watch
	// late (a staked Connect Four game: SPECTATOR_DELAY), delivered as it
	// happens, ahead of events with lower seqs that follow it; it is not
	// delivered again in its place.
	Ahead bool
}

// Follow is a game followed live. Events delivers every event of the game
// after the one FollowGame started from, each once and in seq order
// (but for those marked Ahead), across reconnects; it closes after game:completed, when the context
// ends, or on an error that reconnecting cannot cure (then Err says
// which).
type Follow struct {
	Events <-chan Event

	f follower[Event]
}

// Err returns why Events closed early: nil after game:completed or when
// the context ended, else the error.
func (f *Follow) Err() error { return f.f.Err() }

// Reconnects returns how many times the socket was opened again.
func (f *Follow) Reconnects() int { return f.f.Reconnects() }

// FollowGame opens the live socket (/ws), joins the game and returns its
// events; the first is EventJoined with the state. After a disconnect it
// reconnects and rejoins from the last seq it delivered, so that no event
// is lost or repeated; told to resync, it rejoins the same way. It needs a
// signed-in client (a wallet or a token). It returns the API's error when
// the socket is refused or the join fails (*APIError with NOT_FOUND or
// GAME_NOT_ACTIVE).
func (c *Client) FollowGame(ctx context.Context, gameID string) (*Follow, error) {
	fg := new(Follow)
	if err := fg.f.start(ctx, c, gameRoom(c, gameID), &fg.Events); err != nil {
		return nil, err
	}
	return fg, nil
}

// gameRoom is a game's room. A game that is no longer active (or gone)
// when it is rejoined has its events up to the end read over HTTP.
func gameRoom(c *Client, gameID string) room[Event] {
	over := func(code string) ending {
		if code == "GAME_NOT_ACTIVE" || code == "NOT_FOUND" {
			return readRecord
		}
		return goOn
	}
	return room[Event]{
		kind: "game", id: gameID, join: "join-game", idKey: "gameId",
		joined: EventJoined, resumed: "resumed", resync: "resync",
		state: func(fr *frame) json.RawMessage { return fr.State },
		mine:  func(fr *frame) bool { return fr.GameID == "" || strings.EqualFold(fr.GameID, gameID) },
		event: func(seq int64, name string, data json.RawMessage) Event {
			return Event{GameID: gameID, Seq: seq, Name: name, Data: data}
		},
		ahead: func(seq int64, name string, data json.RawMessage) Event {
			return Event{GameID: gameID, Seq: seq, Name: name, Data: data, Ahead: true}
		},
		presence: EventSpectators,
		final:    []string{EventCompleted},
		record: func(ctx context.Context, after int64) ([]recorded, error) {
			id, err := gameUUID(gameID)
			if err != nil {
				return nil, err
			}
			r, err := c.API.GetGamesByIdEventsWithResponse(ctx, id, &api.GetGamesByIdEventsParams{After: &after})
			if err != nil {
				return nil, err
			}
			return recordPage(r.StatusCode(), r.Body)
		},
		refused: func(ae *APIError) ending { return over(ae.Code) },
		// Any other error on a joined socket answers a rejoin (after a
		// resync) that failed: the socket is no longer in the room, so
		// following goes on from a new one.
		failed: func(fr *frame) ending {
			if e := over(fr.Code); e == readRecord {
				return e
			}
			return resume
		},
	}
}

// wsURL is the socket's address.
func (c *Client) wsURL() string {
	return "ws" + strings.TrimPrefix(c.baseURL, "http") + "/ws"
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

// watch closes conn when ctx ends, and keeps pushing its read deadline
// back as the server's pings come (it answers them); it returns the
// function that stops closing conn with ctx, for when reading is over.
func watch(ctx context.Context, conn *websocket.Conn) (stop func() bool) {
	stop = context.AfterFunc(ctx, func() { conn.Close() })
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPingHandler(func(data string) error {
		conn.SetReadDeadline(time.Now().Add(pongWait))
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
	})
	return stop
}
