package handlers

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/integrity"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/settlement"
	"wager/domain/social"
	"wager/domain/tournament"
	"wager/web"
	"wager/web/live"
)

// LiveProtocol returns the AsyncAPI description of the live socket, built
// from the frame types of web/live and the event and notice types of the
// domain packages.
func (a *App) LiveProtocol() *web.AsyncAPI {
	host, protocol := "localhost:8080", "ws"
	if u, err := url.Parse(a.PublicURL); err == nil && u.Host != "" {
		host = u.Host
		if u.Scheme == "https" {
			protocol = "wss"
		}
	}
	events := byName(domain.GameEvents, rules.Events, game.Events, settlement.Events, chat.Events, market.Events, integrity.Events)
	notices := byName(domain.Notices, game.Notices, chat.Notices, money.Notices, notify.Notices, social.Notices)
	schemas := settingsSchemas()
	// An AsyncAPI schema's discriminator is the property's name alone.
	schemas["GameSettings"].(map[string]any)["discriminator"] = "gameType"
	g, t := live.FramesOf(domain.GameStream), live.FramesOf(domain.TournamentStream)
	schemas["GameState"] = map[string]any{"description": "A game's state as GET /games/{id}/state answers it: the view of its game type.",
		"oneOf":         []any{map[string]any{"$ref": "#/components/schemas/RulesRPSView"}, map[string]any{"$ref": "#/components/schemas/RulesC4View"}},
		"discriminator": "gameType"}
	return &web.AsyncAPI{
		Title: "Wager Arena live socket", Version: APIVersion,
		Description: "GET /ws upgrades to a WebSocket that carries game rooms and personal notices. " +
			"Send join-game {gameId} for joined (the state as of seq) and then every event after seq, in order, each once; " +
			"after a disconnect, send join-game {gameId, lastSeq} for resumed and exactly the events after lastSeq " +
			"(or joined with the whole state when the gap is too long to replay). Told to resync, join again with your last seq. " +
			"A socket that stops reading is closed with 1013 (try again later): reconnect and join again with your last seqs. " +
			"Spectator counts (game:spectators) are presence, not events: they carry no seq and are never replayed. " +
			"A spectator of a staked Connect Four game sees it SPECTATOR_DELAY late (default 5 s): joined carries the state as of the last event that old, " +
			"and each event follows, in seq order, once it is that old; its chat messages, donations and pot come at once besides, marked ahead: true, " +
			"and again in their place (an ahead event does not move the last seq you have). Players see everything at once. " +
			"Tournaments have rooms too: join-tournament {tournamentId, lastSeq?} answers joined-tournament (the tournament as of seq) " +
			"or resumed-tournament, then its events (tournament:standings at most once a second, tournament:pairing, tournament:finished, ...) " +
			"with a seq per tournament, in order.",
		Host: host, Protocol: protocol, Address: "/ws",
		Send: []web.Message{{Name: "client message", Summary: "join-game {gameId, lastSeq?}, leave-game {gameId}, join-tournament {tournamentId, lastSeq?}, leave-tournament {tournamentId} or ping",
			Payload: live.ClientMessage{}}},
		Receive: []web.Message{
			room(g.Joined, "Answers join-game: the game's state as of seq; only events after seq follow."),
			room(g.Resumed, "Answers join-game with a lastSeq whose gap can be replayed: the events after seq follow."),
			{Name: string(domain.EventSpectators), Summary: "The game's spectator count on every instance, at most twice a second: presence, without a seq.", Payload: live.CrowdFrame{}},
			room(g.Resync, "The socket fell behind in a room and left it: join again with the last seq you have."),
			{Name: "error", Summary: "A client message failed: NOT_FOUND or GAME_NOT_ACTIVE for a join, VALIDATION_ERROR or INVALID_JSON for a bad message.", Payload: live.ErrorFrame{}},
			room(g.Left, "Answers leave-game."),
			{Name: "pong", Summary: "Answers ping.", Payload: live.PongFrame{}},
			room(t.Joined, "Answers join-tournament: the tournament as of seq (as GET /tournaments/{id}); only events after seq follow."),
			room(t.Resumed, "Answers join-tournament with a lastSeq whose gap can be replayed: the events after seq follow."),
			room(t.Resync, "The socket fell behind in a tournament's room and left it: join again with the last seq you have."),
			room(t.Left, "Answers leave-tournament."),
		},
		Event: g.Event, Notice: live.NoticeFrame{}, Events: events, Notices: notices,
		TournamentEvent: t.Event, TournamentEvents: byName(domain.TournamentEvents, tournament.Events),
		Schemas: schemas, Components: []any{rules.RPSView{}, rules.C4View{}, tournament.Detail{}},
	}
}

// room is a room's frame as a message of the document.
func room(f live.Frame, summary string) web.Message {
	return web.Message{Name: f.Type, Summary: summary, Payload: f.Payload, Schema: f.Schema}
}

// byName is the data types of the names, as the document keys them, from
// the maps of the packages that send them: a name without a data type is
// left out of the document, and a data type of a name not listed too.
func byName[K ~string](names []K, types ...map[K]any) map[string]any {
	out := make(map[string]any, len(names))
	for _, name := range names {
		for _, m := range types {
			if t, ok := m[name]; ok {
				out[string(name)] = t
			}
		}
	}
	return out
}

// servedDocument is a document encoded once, with its ETag and its gzip
// encoding: the documents do not change while the server runs.
type servedDocument struct {
	once       sync.Once
	body, gzip []byte
	etag       string
}

// serve answers the document built by build: 304 when If-None-Match names
// its ETag, gzip-encoded to clients that accept it.
func (d *servedDocument) serve(c echo.Context, build func() any) error {
	d.once.Do(func() {
		d.body, _ = json.Marshal(build()) // documents are maps of JSON values
		sum := sha256.Sum256(d.body)
		d.etag = `"` + hex.EncodeToString(sum[:12]) + `"`
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(d.body)
		zw.Close()
		d.gzip = buf.Bytes()
	})
	h := c.Response().Header()
	h.Set("ETag", d.etag)
	h.Set("Cache-Control", "no-cache")
	h.Add("Vary", "Accept-Encoding")
	if etagMatches(c.Request().Header.Get("If-None-Match"), d.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	if acceptsGzip(c.Request().Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, d.gzip)
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, d.body)
}

// etagMatches reports whether an If-None-Match header names etag (or is *).
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header takes gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

func (a *App) openAPI(c echo.Context) error {
	return a.openapiDoc.serve(c, func() any { return a.Docs.Document() })
}

func (a *App) asyncAPI(c echo.Context) error {
	return a.asyncapiDoc.serve(c, func() any { return a.Protocol.Document() })
}
