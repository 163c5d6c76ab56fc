package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/settlement"
	"wager/domain/users"
	"wager/web"
	"wager/web/live"
)

// Games serves game types, lobbies and matchmaking, challenges,
// rematches, a game's state, events and moves. Make it with NewGames.
type Games struct {
	Users      *users.Service
	Settlement *settlement.Service
	Games      *game.Service
	Events     *eventlog.Log
	Live       *live.Hub

	details domain.SeqCache[*cachedDetail] // GET /games/:id by game id
	live    struct {                       // GET /games/live
		mu    sync.Mutex
		games []game.LiveGame
		at    time.Time
	}
}

// NewGames returns the games' handlers over these services.
func NewGames(users *users.Service, settlement *settlement.Service, games *game.Service, events *eventlog.Log, hub *live.Hub) *Games {
	h := &Games{Users: users, Settlement: settlement, Games: games, Events: events, Live: hub}
	h.details = domain.SeqCache[*cachedDetail]{Latest: hub.LatestSeq, MaxAge: game.ReadCacheAge, Size: 10_000}
	return h
}

// Routes registers game types, metrics, live games, lobbies and their
// queues, and a game's metadata, state, events and actions.
func (h *Games) Routes(r Router) {
	r.JSON(http.MethodGet, "/games/available", h.availableGames, web.Op{Tag: "games", Auth: web.AuthNone,
		Summary: "Game types with their settings", Response: []rules.Info{}})
	r.JSON(http.MethodGet, "/games/metrics", h.gameMetrics, web.Op{Tag: "games", Auth: web.AuthNone,
		Summary: "Real-time platform metrics", Response: game.Metrics{}})
	r.JSON(http.MethodGet, "/games/live", h.liveGames, web.Op{Tag: "spectate", Auth: web.AuthOptional,
		Summary: "Active games, most watched first", Response: []game.LiveGame{}})
	r.JSON(http.MethodGet, "/spectate/live-players", h.livePlayers, web.Op{Tag: "spectate", Auth: web.AuthOptional,
		Summary: "Everyone playing right now, one entry per user", Response: []game.LivePlayer{}})
	r.JSON(http.MethodPost, "/lobbies", h.createLobby, moneyIn(web.Op{Tag: "games", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Open a lobby (a table of one game type and stake)", Request: LobbyRequest{}, Response: game.Lobby{}}))
	r.JSON(http.MethodGet, "/lobbies", h.listLobbies, web.Op{Tag: "games", Auth: web.AuthOptional,
		Summary: "The newest lobbies with their queue lengths", Response: []game.Lobby{}})
	r.JSON(http.MethodPost, "/lobbies/:id/join-queue", h.joinQueue, moneyIn(web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary:     "Join the lobby's matchmaking queue",
		Description: "Answers queued, or matched with the new game's id when someone was waiting. Stakes are locked from both platform balances.",
		Response:    game.JoinResult{}, Errors: []int{http.StatusNotFound, http.StatusConflict}}))
	r.JSON(http.MethodDelete, "/lobbies/:id/join-queue", h.leaveQueue, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Leave the lobby's queue", Response: StatusAnswer{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/games/:id", h.gameMetadata, web.Op{Tag: "games", Auth: web.AuthNone,
		Summary:     "Public game metadata; result and history once completed",
		Description: "Includes the escrow address, the pot, and the settlement's on-chain transfers, so anyone can check the payout on chain.",
		Response:    GameDetail{}, Errors: []int{http.StatusNotFound}, ETag: true})
	r.JSON(http.MethodGet, "/games/:id/state", h.gameState, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Game state, the same for players and spectators",
		Description: "Round, timer, scores, revealed history, who has submitted. Hidden choices never appear before their reveal. 409 GAME_NOT_ACTIVE when the game is not active. " +
			"A spectator of a staked Connect Four game sees it SPECTATOR_DELAY late (default 5 s): the state as of the last event that old, with that event's seq.",
		Response: web.OneOf{Property: "gameType", Types: map[string]any{"rps": rules.RPSView{}, "connect4": rules.C4View{}}},
		Errors:   []int{http.StatusNotFound, http.StatusConflict}})
	r.JSON(http.MethodGet, "/games/:id/events", h.gameEvents, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "The game's events after a seq (for clients that poll instead of using /ws)", Response: EventsPage{},
		Description: "A spectator of a staked Connect Four game gets only the events at least SPECTATOR_DELAY old (default 5 s); players get every one.",
		Query:       []web.Param{{Name: "after", Description: "the last seq you have; 0 for all", Type: "integer", Min: web.Bound(0)}}})
	r.JSON(http.MethodPost, "/games/:id/actions", h.gameAction, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary:     "Submit an action (players only)",
		Description: "{type: move, move: ...} or {type: resign}. 403 NOT_A_PLAYER; 409 ALREADY_MOVED, NOT_YOUR_TURN, GAME_NOT_ACTIVE; 400 INVALID_MOVE.",
		Request:     game.Action{}, Response: game.ActResult{}, Errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusNotFound}})
	r.JSON(http.MethodGet, "/users/me/current-game", h.currentGame(func(c echo.Context) string { return web.IdentityOf(c).UserID }),
		web.Op{Tag: "games", Auth: web.AuthRequired, Summary: "Your active game; 204 when none", Response: game.CurrentGame{},
			Responses: map[int]any{http.StatusNoContent: nil}})
	r.JSON(http.MethodGet, "/users/me/games/recall", h.recall, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Game recall: your last 10 staked games that ended, newest first, with every step, stakes, payouts and your balance before and after",
		Description: "Balances are your platform balance (available and locked) from the ledger: just before the game took your stake, and just after " +
			"it paid out (a win's payout, a draw's or a cancellation's stake back). balanceAfterMinor - balanceBeforeMinor differs from " +
			"payoutMinor - stakeMinor only by what else moved your balance while the game ran (another game, a deposit).",
		Response: []game.Recalled{}})
	r.JSON(http.MethodGet, "/users/:id/current-game", h.currentGame(func(c echo.Context) string { return c.Param("id") }),
		web.Op{Tag: "games", Auth: web.AuthOptional, Summary: "A user's active game; 204 when none", Response: game.CurrentGame{},
			Description: "404 NOT_FOUND when there is no such user.",
			Responses:   map[int]any{http.StatusNoContent: nil}, Errors: []int{http.StatusNotFound}})
}

// ChallengeRoutes registers rematches and challenges.
func (h *Games) ChallengeRoutes(r Router) {
	for _, m := range []string{http.MethodPost, http.MethodDelete, http.MethodGet} {
		summary := map[string]string{http.MethodPost: "Ask for (or accept) a rematch", http.MethodDelete: "Withdraw your rematch request",
			http.MethodGet: "Rematch state"}[m]
		op := web.Op{Tag: "games", Auth: web.AuthRequired, Summary: summary,
			Response: game.Rematch{}, Errors: []int{http.StatusForbidden, http.StatusConflict}}
		if m == http.MethodPost { // a staked rematch locks the stakes
			op = moneyIn(op)
		}
		r.JSON(m, "/games/:id/rematch", h.rematch, op)
	}
	r.JSON(http.MethodPost, "/games/:id/rematch/lobby", h.rematchLobby, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Tell the room you opened a lobby for the rematch", Request: RematchLobbyRequest{}, Response: StatusAnswer{}})
	r.JSON(http.MethodPost, "/challenges", h.createChallenge, moneyIn(web.Op{Tag: "games", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Challenge a user to a game (expires after 5 minutes)",
		Description: "The user gets a challenge notification. 403 FORBIDDEN when either of you blocked the other. At most 10 of your challenges may be pending at once (not yet accepted, declined, cancelled or expired): " +
			"the 11th is 409 CONFLICT until you cancel one or one is answered or expires.",
		Request: ChallengeRequest{}, Response: game.Challenge{}, Errors: []int{http.StatusForbidden, http.StatusNotFound, http.StatusConflict}}))
	r.JSON(http.MethodGet, "/challenges", h.listChallenges, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Your pending challenges, sent and received", Response: []game.Challenge{}})
	for _, answer := range []string{"accept", "decline"} {
		op := web.Op{Tag: "games", Auth: web.AuthRequired,
			Summary: answer + " a challenge sent to you", Response: game.Challenge{}, Errors: []int{http.StatusNotFound, http.StatusConflict}}
		if answer == "accept" { // a staked challenge locks the stakes
			op = moneyIn(op)
		}
		r.JSON(http.MethodPost, "/challenges/:id/"+answer, h.respondChallenge(answer), op)
	}
	r.JSON(http.MethodDelete, "/challenges/:id", h.respondChallenge("cancel"), web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Cancel a challenge you sent", Response: game.Challenge{}, Errors: []int{http.StatusConflict}})
}

func (h *Games) availableGames(c echo.Context) error {
	return c.JSON(http.StatusOK, rules.Available())
}

func (h *Games) gameMetrics(c echo.Context) error {
	m, err := h.Games.Metrics(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}

func (h *Games) liveGames(c echo.Context) error {
	games, err := h.liveList(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, games)
}

func (h *Games) livePlayers(c echo.Context) error {
	games, err := h.liveList(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, game.PlayersOf(games))
}

// liveListAge is how long the live list serves from memory: a game that
// starts or ends shows in the list within it.
const liveListAge = 250 * time.Millisecond

// liveList returns the live games (at most 100), most watched first, from
// a copy read at most liveListAge ago, with the spectator counts of now.
func (h *Games) liveList(ctx context.Context) ([]game.LiveGame, error) {
	h.live.mu.Lock()
	defer h.live.mu.Unlock()
	if now := time.Now(); now.Sub(h.live.at) >= liveListAge {
		games, err := h.Games.Live(ctx, 100)
		if err != nil {
			return nil, err
		}
		h.live.games, h.live.at = games, now
	}
	out := slices.Clone(h.live.games)
	for i := range out {
		out[i].SpectatorCount = h.Live.Spectators(out[i].GameID)
	}
	slices.SortStableFunc(out, func(x, y game.LiveGame) int { return y.SpectatorCount - x.SpectatorCount })
	return out, nil
}

// LobbyRequest is the body of POST /lobbies.
type LobbyRequest struct {
	GameType   string          `json:"gameType" enum:"connect4,rps" doc:"see GET /games/available"`
	StakeMinor int64           `json:"stakeMinor" minimum:"0" maximum:"100000000000" doc:"per player; 0 for a free game"`
	Settings   json.RawMessage `json:"settings,omitempty" schema:"GameSettings" doc:"the game type's settings; omit for the defaults"`
}

func (h *Games) createLobby(c echo.Context) error {
	var req LobbyRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	l, err := h.Games.CreateLobby(c.Request().Context(), web.IdentityOf(c).UserID, req.GameType, req.StakeMinor, req.Settings)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, l)
}

func (h *Games) listLobbies(c echo.Context) error {
	lobbies, err := h.Games.Lobbies(c.Request().Context(), 50)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, lobbies)
}

func (h *Games) joinQueue(c echo.Context) error {
	r, err := h.Games.JoinQueue(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (h *Games) leaveQueue(c echo.Context) error {
	if err := h.Games.LeaveQueue(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id")); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, StatusAnswer{Status: "left"})
}

func (h *Games) gameMetadata(c echo.Context) error {
	d, err := h.gameDetail(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	count := h.Live.Spectators(d.GameID)
	body, err := d.encoded(count)
	if err != nil {
		return err
	}
	// The answer changes with the game's events and its spectators only.
	etag := `W/"` + strconv.Itoa(d.LastSeq) + "." + strconv.Itoa(count) + `"`
	c.Response().Header().Set("ETag", etag)
	if c.Request().Header.Get("If-None-Match") == etag {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSONBlob(http.StatusOK, body)
}

func (h *Games) gameState(c echo.Context) error {
	st, err := h.Games.StateFor(c.Request().Context(), c.Param("id"), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// EventsPage is a slice of a game's event stream.
type EventsPage struct {
	Events []RoomEvent `json:"events"`
}

// RoomEvent is one stored event of a game's room.
type RoomEvent struct {
	GameID    string           `json:"gameId"`
	Seq       int              `json:"seq"`
	Name      domain.EventName `json:"event"`
	Data      json.RawMessage  `json:"data" type:"object" doc:"the event's payload; its shape depends on the event name"`
	CreatedAt time.Time        `json:"createdAt"`
}

func (h *Games) gameEvents(c echo.Context) error {
	after, err := strconv.Atoi(c.QueryParam("after"))
	if c.QueryParam("after") != "" && (err != nil || after < 0) {
		return domain.Invalid(map[string]string{"after": "must be a seq number, 0 or more"})
	}
	g, err := h.Games.Game(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	evs, err := h.Events.Events(c.Request().Context(), domain.GameStreamOf(g.ID), after, 200)
	if err != nil {
		return err
	}
	evs = h.Games.EventsFor(g, web.IdentityOf(c).UserID, evs)
	page := EventsPage{Events: make([]RoomEvent, len(evs))}
	for i, e := range evs {
		page.Events[i] = RoomEvent{GameID: e.Stream.ID, Seq: e.Seq, Name: e.Name, Data: e.Data, CreatedAt: e.CreatedAt}
	}
	return c.JSON(http.StatusOK, page)
}

func (h *Games) recall(c echo.Context) error {
	out, err := h.Games.Recall(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Games) gameAction(c echo.Context) error {
	var req game.Action
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := h.Games.Act(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (h *Games) currentGame(userID func(echo.Context) string) echo.HandlerFunc {
	return func(c echo.Context) error {
		cg, err := h.Games.CurrentGameOf(c.Request().Context(), userID(c))
		if err != nil {
			return err
		}
		if cg == nil {
			return c.NoContent(http.StatusNoContent)
		}
		return c.JSON(http.StatusOK, cg)
	}
}

func (h *Games) rematch(c echo.Context) error {
	ctx, uid, id := c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id")
	var r game.Rematch
	var err error
	switch c.Request().Method {
	case http.MethodPost:
		r, err = h.Games.RequestRematch(ctx, uid, id)
	case http.MethodDelete:
		r, err = h.Games.CancelRematch(ctx, uid, id)
	default:
		r, err = h.Games.RematchOf(ctx, id)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// RematchLobbyRequest is the body of POST /games/:id/rematch/lobby.
type RematchLobbyRequest struct {
	LobbyID string `json:"lobbyId"`
}

func (h *Games) rematchLobby(c echo.Context) error {
	var req RematchLobbyRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.Games.AnnounceRematchLobby(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.LobbyID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, StatusAnswer{Status: "announced"})
}

// ChallengeRequest is the body of POST /challenges.
type ChallengeRequest struct {
	ToUserID   string          `json:"toUserId,omitempty"`
	ToUsername string          `json:"toUsername,omitempty" doc:"instead of toUserId"`
	GameType   string          `json:"gameType" enum:"connect4,rps" doc:"see GET /games/available"`
	StakeMinor int64           `json:"stakeMinor" minimum:"0" maximum:"100000000000"`
	Settings   json.RawMessage `json:"settings,omitempty" schema:"GameSettings" doc:"the game type's settings; omit for the defaults"`
}

func (h *Games) createChallenge(c echo.Context) error {
	var req ChallengeRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	to := req.ToUserID
	if to == "" && req.ToUsername != "" {
		u, err := h.Users.ByUsername(ctx, req.ToUsername)
		if err != nil {
			return err
		}
		to = u.ID
	}
	if to == "" {
		return domain.Invalid(map[string]string{"toUserId": "name the user to challenge (toUserId or toUsername)"})
	}
	ch, err := h.Games.CreateChallenge(ctx, web.IdentityOf(c).UserID, to, req.GameType, req.StakeMinor, req.Settings)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, ch)
}

func (h *Games) listChallenges(c echo.Context) error {
	list, err := h.Games.Challenges(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

func (h *Games) respondChallenge(answer string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ch, err := h.Games.RespondChallenge(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), answer)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, ch)
	}
}

// GameDetail is a game's public metadata with what anyone needs to check
// its money on chain.
type GameDetail struct {
	game.Meta
	EscrowAddress string                `json:"escrowAddress" doc:"the game's escrow: donations are sent here on chain"`
	Pot           settlement.Pot        `json:"pot"`
	Settlement    []settlement.Transfer `json:"settlement" doc:"on-chain transfers of the settlement, with their signatures"`
}

// gameDetail returns a game's public detail: from memory while no event
// happened in the game since it was read (h.details), else read.
func (h *Games) gameDetail(ctx context.Context, id string) (*cachedDetail, error) {
	now := time.Now()
	if d, ok := h.details.Get(id, now); ok {
		return d, nil
	}
	m, err := h.Games.Metadata(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := h.Settlement.PotFor(ctx, m)
	if err != nil {
		return nil, err
	}
	transfers := []settlement.Transfer{}
	if m.Status == game.StatusCompleted || m.Status == game.StatusCancelled {
		if transfers, err = h.Settlement.Transfers(ctx, m.GameID); err != nil {
			return nil, err
		}
	}
	d := &cachedDetail{GameDetail: GameDetail{Meta: m, EscrowAddress: h.Settlement.EscrowAddress(m.GameID).String(), Pot: p,
		Settlement: transfers}}
	// A transfer on its way changes without an event until it confirms.
	if !slices.ContainsFunc(transfers, func(t settlement.Transfer) bool { return t.Status != "confirmed" }) {
		h.details.Put(id, m.LastSeq, d, now)
	}
	return d, nil
}

// cachedDetail is a game's detail with its last encoding, which serves
// while the spectator count stays the same. It is shared by the requests
// that read it from h.details: GameDetail never changes once made, and the
// encoding is swapped whole.
type cachedDetail struct {
	GameDetail
	last atomic.Pointer[encodedDetail]
}

// encodedDetail is the detail's JSON with count spectators.
type encodedDetail struct {
	count int
	body  []byte
}

// encoded returns the detail's JSON with count spectators; the bytes are
// shared, the caller's to send but not to change.
func (d *cachedDetail) encoded(count int) ([]byte, error) {
	if e := d.last.Load(); e != nil && e.count == count {
		return e.body, nil
	}
	g := d.GameDetail // a copy: the one in d is shared
	g.SpectatorCount = count
	body, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("encode game %s: %w", d.GameID, err)
	}
	d.last.Store(&encodedDetail{count: count, body: body})
	return body, nil
}

// StatusAnswer is the answer of an operation that only says what it did.
type StatusAnswer struct {
	Status string `json:"status" enum:"left,announced" doc:"left or announced"`
}
