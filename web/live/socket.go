package live

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"wager/domain"
)

const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = 25 * time.Second
	maxMessage = 4096
)

// Client is the authenticated user who opens a socket.
type Client struct {
	UserID string
	// Session is true for a browser session cookie, which only this
	// site's pages may use; a token is not ambient, so any origin may.
	Session bool
}

// Serve upgrades an authenticated request to the live socket and serves
// it until it closes: game rooms (join-game, leave-game, resume by
// lastSeq) and the user's notices. ?format=html makes it a page's socket
// (HTML fragments for htmx) instead of an API socket (JSON frames).
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, client Client) {
	audience := JSON
	if r.URL.Query().Get("format") == "html" {
		audience = HTML
	}
	upgrader := websocket.Upgrader{
		ReadBufferSize: 1024, WriteBufferSize: 4096, WriteBufferPool: writeBuffers,
		CheckOrigin: func(r *http.Request) bool {
			if !client.Session {
				return true
			}
			origin := r.Header.Get("Origin")
			return origin == "" || origin == "http://"+r.Host || origin == "https://"+r.Host
		},
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	// The socket lives on in two goroutines of its own, which start with
	// small stacks, and the request's goroutine (whose stack grew through
	// the middleware) ends.
	c := NewConn(client.UserID, audience)
	h.Register(c)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	go h.write(ws, c, cancel)
	go func() {
		h.read(ctx, ws, c)
		cancel()
		h.Unregister(c)
		ws.Close()
	}()
}

// writeBuffers lends sockets a write buffer only while they write, so an
// idle socket holds none.
var writeBuffers = &sync.Pool{}

func (h *Hub) write(ws *websocket.Conn, c *Conn, cancel context.CancelFunc) {
	ping := time.NewTicker(pingPeriod)
	defer func() {
		ping.Stop()
		cancel()
		ws.Close() // unblocks the reader
	}()
	for {
		select {
		case <-c.Done():
			ws.SetWriteDeadline(time.Now().Add(h.writeWait))
			ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "too far behind"))
			return
		case frame := <-c.send:
			ws.SetWriteDeadline(time.Now().Add(h.writeWait))
			if err := ws.WriteMessage(websocket.TextMessage, frame); err != nil {
				return
			}
		case <-ping.C:
			ws.SetWriteDeadline(time.Now().Add(h.writeWait))
			if err := ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

func (h *Hub) read(ctx context.Context, ws *websocket.Conn, c *Conn) {
	ws.SetReadLimit(maxMessage)
	ws.SetReadDeadline(time.Now().Add(pongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var m ClientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			c.reply(ErrorFrame{Type: "error", Code: domain.CodeInvalidJSON, Message: "messages are JSON objects with a type"})
			continue
		}
		if id, ok := domain.CanonicalID(m.GameID); ok {
			m.GameID = id // rooms are keyed by the canonical id
		}
		switch m.Type {
		case "join-game":
			h.join(ctx, c, m)
		case "leave-game":
			h.Leave(c, m.GameID)
			c.reply(LeftFrame{Type: "left", GameID: m.GameID})
		case "ping":
			c.reply(PongFrame{Type: "pong"})
		default:
			c.reply(ErrorFrame{Type: "error", Code: domain.CodeValidation, Message: "unknown message type " + m.Type})
		}
	}
}

func (h *Hub) join(ctx context.Context, c *Conn, m ClientMessage) {
	j, err := h.joins.Join(ctx, m.GameID, c.UserID)
	if err != nil {
		c.reply(errorFrame(m.GameID, err))
		return
	}
	role := "spectator"
	if j.Player {
		role = "player"
	}
	after := m.LastSeq
	if after <= 0 {
		after = j.Seq // a fresh join starts from the state
	}
	c.reply(JoinedFrame{Type: "joined", GameID: m.GameID, Role: role, State: j.State})
	if err := h.Join(ctx, c, m.GameID, after, j.Seq, j.Player); err != nil {
		h.log.Error("live: join a room", "game", m.GameID, "err", err)
		c.reply(errorFrame(m.GameID, err))
	}
}

func errorFrame(gameID string, err error) ErrorFrame {
	var e *domain.Error
	if errors.As(err, &e) {
		return ErrorFrame{Type: "error", Code: e.Code, GameID: gameID, Message: e.Message}
	}
	return ErrorFrame{Type: "error", Code: domain.CodeInternal, GameID: gameID, Message: "something went wrong; try again"}
}
