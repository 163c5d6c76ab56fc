package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/settlement"
	"wager/web"
)

func (a *App) availableGames(c echo.Context) error {
	return c.JSON(http.StatusOK, rules.Available())
}

func (a *App) gameMetrics(c echo.Context) error {
	m, err := a.Games.Metrics(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}

func (a *App) liveGames(c echo.Context) error {
	games, err := a.liveList(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, games)
}

func (a *App) livePlayers(c echo.Context) error {
	games, err := a.liveList(c.Request().Context())
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
func (a *App) liveList(ctx context.Context) ([]game.LiveGame, error) {
	a.live.mu.Lock()
	defer a.live.mu.Unlock()
	if now := time.Now(); now.Sub(a.live.at) >= liveListAge {
		games, err := a.Games.Live(ctx, 100)
		if err != nil {
			return nil, err
		}
		a.live.games, a.live.at = games, now
	}
	out := slices.Clone(a.live.games)
	for i := range out {
		out[i].SpectatorCount = a.Live.Spectators(out[i].GameID)
	}
	slices.SortStableFunc(out, func(x, y game.LiveGame) int { return y.SpectatorCount - x.SpectatorCount })
	return out, nil
}

// LobbyRequest is the body of POST /lobbies.
type LobbyRequest struct {
	GameType   string          `json:"gameType" doc:"see GET /games/available"`
	StakeMinor int64           `json:"stakeMinor" minimum:"0" maximum:"100000000000" doc:"per player; 0 for a free game"`
	Settings   json.RawMessage `json:"settings,omitempty" schema:"GameSettings" doc:"the game type's settings; omit for the defaults"`
}

func (a *App) createLobby(c echo.Context) error {
	var req LobbyRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	l, err := a.Games.CreateLobby(c.Request().Context(), web.IdentityOf(c).UserID, req.GameType, req.StakeMinor, req.Settings)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, l)
}

func (a *App) listLobbies(c echo.Context) error {
	lobbies, err := a.Games.Lobbies(c.Request().Context(), 50)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, lobbies)
}

func (a *App) joinQueue(c echo.Context) error {
	r, err := a.Games.JoinQueue(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (a *App) leaveQueue(c echo.Context) error {
	if err := a.Games.LeaveQueue(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id")); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, StatusAnswer{Status: "left"})
}

func (a *App) gameMetadata(c echo.Context) error {
	d, err := a.gameDetail(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	count := a.Live.Spectators(d.GameID)
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

func (a *App) gameState(c echo.Context) error {
	st, err := a.Games.PublicState(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// EventsPage is a slice of a game's event stream.
type EventsPage struct {
	Events []eventlog.Event `json:"events"`
}

func (a *App) gameEvents(c echo.Context) error {
	after, err := strconv.Atoi(c.QueryParam("after"))
	if c.QueryParam("after") != "" && (err != nil || after < 0) {
		return domain.Invalid(map[string]string{"after": "must be a seq number, 0 or more"})
	}
	m, err := a.Games.Metadata(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	evs, err := a.Rooms.Events(c.Request().Context(), m.GameID, after, 200)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, EventsPage{Events: evs})
}

func (a *App) gameAction(c echo.Context) error {
	var req game.Action
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := a.Games.Act(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (a *App) currentGame(userID func(echo.Context) string) echo.HandlerFunc {
	return func(c echo.Context) error {
		cg, err := a.Games.CurrentGameOf(c.Request().Context(), userID(c))
		if err != nil {
			return err
		}
		if cg == nil {
			return c.NoContent(http.StatusNoContent)
		}
		return c.JSON(http.StatusOK, cg)
	}
}

func (a *App) rematch(c echo.Context) error {
	ctx, uid, id := c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id")
	var r game.Rematch
	var err error
	switch c.Request().Method {
	case http.MethodPost:
		r, err = a.Games.RequestRematch(ctx, uid, id)
	case http.MethodDelete:
		r, err = a.Games.CancelRematch(ctx, uid, id)
	default:
		r, err = a.Games.RematchOf(ctx, id)
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

func (a *App) rematchLobby(c echo.Context) error {
	var req RematchLobbyRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := a.Games.AnnounceRematchLobby(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.LobbyID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, StatusAnswer{Status: "announced"})
}

// ChallengeRequest is the body of POST /challenges.
type ChallengeRequest struct {
	ToUserID   string          `json:"toUserId,omitempty"`
	ToUsername string          `json:"toUsername,omitempty" doc:"instead of toUserId"`
	GameType   string          `json:"gameType"`
	StakeMinor int64           `json:"stakeMinor" minimum:"0" maximum:"100000000000"`
	Settings   json.RawMessage `json:"settings,omitempty" schema:"GameSettings" doc:"the game type's settings; omit for the defaults"`
}

func (a *App) createChallenge(c echo.Context) error {
	var req ChallengeRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	to := req.ToUserID
	if to == "" && req.ToUsername != "" {
		u, err := a.Users.ByUsername(ctx, req.ToUsername)
		if err != nil {
			return err
		}
		to = u.ID
	}
	if to == "" {
		return domain.Invalid(map[string]string{"toUserId": "name the user to challenge (toUserId or toUsername)"})
	}
	ch, err := a.Games.CreateChallenge(ctx, web.IdentityOf(c).UserID, to, req.GameType, req.StakeMinor, req.Settings)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, ch)
}

func (a *App) listChallenges(c echo.Context) error {
	list, err := a.Games.Challenges(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

func (a *App) respondChallenge(answer string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ch, err := a.Games.RespondChallenge(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), answer)
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
// happened in the game since it was read (a.details), else read.
func (a *App) gameDetail(ctx context.Context, id string) (*cachedDetail, error) {
	now := time.Now()
	if d, ok := a.details.Get(id, now); ok {
		return d, nil
	}
	m, err := a.Games.Metadata(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := a.Pot.PotFor(ctx, m)
	if err != nil {
		return nil, err
	}
	transfers := []settlement.Transfer{}
	if m.Status == game.StatusCompleted || m.Status == game.StatusCancelled {
		if transfers, err = a.Pot.Transfers(ctx, m.GameID); err != nil {
			return nil, err
		}
	}
	d := &cachedDetail{GameDetail: GameDetail{Meta: m, EscrowAddress: a.Pot.EscrowAddress(m.GameID).String(), Pot: p,
		Settlement: transfers}}
	// A transfer on its way changes without an event until it confirms.
	if !slices.ContainsFunc(transfers, func(t settlement.Transfer) bool { return t.Status != "confirmed" }) {
		a.details.Put(id, m.LastSeq, d, now)
	}
	return d, nil
}

// cachedDetail is a game's detail with its last encoding, which serves
// while the spectator count stays the same. It is shared by the requests
// that read it from a.details: GameDetail never changes once made, and the
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
	Status string `json:"status" doc:"left or announced"`
}
