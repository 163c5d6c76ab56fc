package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/web"
	"wager/web/live"
)

// liveRoutes registers the live WebSocket.
func (a *App) liveRoutes(r *router) {
	r.live(http.MethodGet, "/ws", a.liveSocket, web.Op{Tag: "spectate", Auth: web.AuthRequired, Status: http.StatusSwitchingProtocols,
		Errors:  []int{http.StatusTooManyRequests},
		Summary: "Live events over WebSocket",
		Description: "Authenticate with Authorization: Bearer, ?token=<jwt> or the session cookie. Send {type: join-game, gameId, lastSeq?}; receive joined (with the state) then {type: event, event, gameId, seq, data}. leave-game leaves. Personal notices arrive as {type: notice, notice, data}; notice balance carries {availableMinor, lockedMinor} each time your platform balance changes (a stake locked, a payout or refund, a deposit, a withdrawal or its reversal). " +
			"A page's socket (?format=html) gets HTML fragments to swap out of band instead (the header's balance). " +
			"At most 20 sockets per user, opened at most 1 a second after the first 20: past that, 429 RATE_LIMITED before the upgrade. " +
			"A socket that sends more than 20 messages a second (bursts of 40), or one message over 4 KiB, is closed (1008, 1009); the user's other sockets are not."})
}

// liveSocket serves the live WebSocket (web/live has the protocol).
func (a *App) liveSocket(c echo.Context) error {
	id := web.IdentityOf(c)
	return a.Live.Serve(c.Response(), c.Request(), live.Client{UserID: id.UserID, Session: id.Session})
}
