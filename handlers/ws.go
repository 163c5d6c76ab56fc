package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/web"
)

const (
	wsWriteWait  = 10 * time.Second
	wsPongWait   = 60 * time.Second
	wsPingPeriod = 25 * time.Second
	wsMaxMessage = 4096
)

// clientMessage is what a socket client sends.
type clientMessage struct {
	Type    string `json:"type"`
	GameID  string `json:"gameId"`
	LastSeq int    `json:"lastSeq"`
}

// serveWS upgrades an authenticated request to the live socket: game rooms
// (join-game, leave-game, resume by lastSeq) and the user's notices.
func (a *App) serveWS(c echo.Context) error {
	id := web.IdentityOf(c)
	if id == nil {
		return domain.Errorf(domain.CodeUnauthorized, "sign in first: send a bearer token, ?token= or the session cookie")
	}
	audience := web.AudienceJSON
	if c.QueryParam("format") == "html" {
		audience = web.AudienceHTML
	}
	upgrader := websocket.Upgrader{
		ReadBufferSize: 1024, WriteBufferSize: 4096,
		// A cookie session must come from this site's pages; a token is
		// not ambient, so any origin may use one.
		CheckOrigin: func(r *http.Request) bool {
			if !id.Session {
				return true
			}
			origin := r.Header.Get("Origin")
			return origin == "" || origin == "http://"+r.Host || origin == "https://"+r.Host
		},
	}
	conn, err := upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	sub := web.NewSubscriber(id.UserID, audience)
	a.Hub.Connect(sub)
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.Request().Context()))
	go a.wsWriter(conn, sub, cancel)
	a.wsReader(ctx, conn, sub)
	cancel()
	a.Hub.Disconnect(sub)
	conn.Close()
	return nil
}

func (a *App) wsWriter(conn *websocket.Conn, sub *web.Subscriber, cancel context.CancelFunc) {
	ping := time.NewTicker(wsPingPeriod)
	defer func() {
		ping.Stop()
		cancel()
		conn.Close() // unblocks the reader
	}()
	for {
		select {
		case <-sub.Done:
			conn.SetWriteDeadline(time.Now().Add(wsWriteWait))
			conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "too slow"))
			return
		case frame := <-sub.Send:
			conn.SetWriteDeadline(time.Now().Add(wsWriteWait))
			if err := conn.WriteMessage(websocket.TextMessage, frame); err != nil {
				return
			}
		case <-ping.C:
			conn.SetWriteDeadline(time.Now().Add(wsWriteWait))
			if err := conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

func (a *App) wsReader(ctx context.Context, conn *websocket.Conn, sub *web.Subscriber) {
	conn.SetReadLimit(wsMaxMessage)
	conn.SetReadDeadline(time.Now().Add(wsPongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(wsPongWait)) })
	reply := func(v any) {
		b, _ := json.Marshal(v)
		if sub.Audience == web.AudienceJSON {
			sub.Deliver(b)
		}
	}
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var m clientMessage
		if err := json.Unmarshal(data, &m); err != nil {
			reply(map[string]any{"type": "error", "code": domain.CodeInvalidJSON, "message": "messages are JSON objects with a type"})
			continue
		}
		if id, ok := domain.CanonicalID(m.GameID); ok {
			m.GameID = id // rooms are keyed by the canonical id
		}
		switch m.Type {
		case "join-game":
			a.wsJoin(ctx, sub, m, reply)
		case "leave-game":
			a.Hub.Leave(sub, m.GameID)
			reply(map[string]any{"type": "left", "gameId": m.GameID})
		case "ping":
			reply(map[string]any{"type": "pong"})
		default:
			reply(map[string]any{"type": "error", "code": domain.CodeValidation, "message": "unknown message type " + m.Type})
		}
	}
}

// JoinedFrame is the first frame of a room: the state everyone may see.
type JoinedFrame struct {
	Type   string         `json:"type"`
	GameID string         `json:"gameId"`
	Role   string         `json:"role" doc:"player or spectator"`
	State  map[string]any `json:"state"`
}

func (a *App) wsJoin(ctx context.Context, sub *web.Subscriber, m clientMessage, reply func(any)) {
	state, err := a.Games.PublicState(ctx, m.GameID)
	if err != nil {
		e := web.AsError(err)
		reply(map[string]any{"type": "error", "code": e.Code, "gameId": m.GameID, "message": e.Message})
		return
	}
	isPlayer, err := a.Games.IsPlayer(ctx, m.GameID, sub.UserID)
	if err != nil {
		reply(map[string]any{"type": "error", "code": domain.CodeInternal, "gameId": m.GameID})
		return
	}
	role := "spectator"
	if isPlayer {
		role = "player"
	}
	after := m.LastSeq
	if after <= 0 {
		after = state["seq"].(int) // a fresh join starts from the state
	}
	var joined []byte
	if sub.Audience == web.AudienceJSON {
		joined, _ = json.Marshal(JoinedFrame{Type: "joined", GameID: m.GameID, Role: role, State: state})
	}
	a.Hub.Join(sub, m.GameID, after, isPlayer, joined)
}
