package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/gamelog"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/tournament"
	"wager/domain/users"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// gamePages serve the play, game and TV pages and their forms.
type gamePages struct {
	users       *users.Service
	games       *game.Service
	chat        *chat.Service
	market      *market.Service
	tournaments *tournament.Service
	gamesLog    *gamelog.Log
	bots        DemoBots
	gameViews   *livepage.Games
	header      *header.Header
}

func (h *gamePages) gamePage(c echo.Context) error {
	return h.renderGamePage(c, c.Param("id"), false)
}

// tvPage follows the most-watched live game; the page comes back here for
// the next one when it ends.
func (h *gamePages) tvPage(c echo.Context) error {
	ctx := c.Request().Context()
	live, err := h.games.Live(ctx, tvCandidates)
	if err != nil {
		return err
	}
	top, err := h.tournaments.TopGame(ctx)
	if err != nil {
		return err
	}
	id := tvPick(live, top)
	if id == "" {
		return web.Render(c, http.StatusOK, views.TVOff(h.header.Page(c, "TV")))
	}
	return h.renderGamePage(c, id, true)
}

// tvCandidates is how many of the newest live games TV chooses from.
const tvCandidates = 200

// tvPick is the game TV shows: the most watched (live is in that order);
// among the equally watched, the running arena's leader's game (top),
// then the biggest pot, then the newest.
func tvPick(live []game.LiveGame, top string) string {
	if len(live) == 0 {
		return ""
	}
	best := live[0]
	for _, g := range live[1:] {
		if g.SpectatorCount < best.SpectatorCount {
			break
		}
		if best.GameID != top && (g.GameID == top || g.PotMinor > best.PotMinor) {
			best = g
		}
	}
	return best.GameID
}

func (h *gamePages) renderGamePage(c echo.Context, gameID string, tv bool) error {
	return h.renderGame(c, gameID, tv, "")
}

// renderGame renders the game page, with why a berserk was refused.
func (h *gamePages) renderGame(c echo.Context, gameID string, tv bool, berserkErr string) error {
	ctx := c.Request().Context()
	viewer := web.IdentityOf(c)
	g, err := h.gameViews.GameView(ctx, gameID, viewer)
	if err != nil {
		return err
	}
	g.TV, g.BerserkError = tv, berserkErr
	if g.Result != nil {
		if g.LogIndex, g.Logged, err = h.gamesLog.IndexOf(ctx, g.GameID); err != nil {
			return err
		}
	}
	// The market is on the page as it opens; live, its own events swap it
	// (so GameView, which renders every other live event, leaves it out).
	if g.Bets != nil {
		m, err := h.market.Market(ctx, g.GameID)
		if err != nil {
			return err
		}
		g.Market = livepage.MarketView(m)
		if g.Me != "" && !g.IsPlayer {
			if g.MarketMine, err = marketMine(ctx, h.market, g.Me, m); err != nil {
				return err
			}
		}
	}
	if viewer == nil {
		g.Deadline = time.Time{} // the page does not follow the game: no clock runs down on it
		for i := range g.Players {
			g.Players[i].BerserkDeadline = time.Time{}
		}
	} else {
		msgs, err := h.chat.History(ctx, viewer.UserID, "game", g.GameID, 50, 0)
		if err != nil {
			return err
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			g.Chat = append(g.Chat, livepage.ChatLine(msgs[i]))
		}
	}
	title := views.GameTitle(g)
	if tv {
		title = "TV: " + title
	}
	return web.Render(c, http.StatusOK, views.GamePage(h.header.Page(c, title), g))
}

// gameBerserk is the arena game page's berserk button: the page again,
// with the halved clock, or with why not.
func (h *gamePages) gameBerserk(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	ctx := c.Request().Context()
	meta, err := h.games.Metadata(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if meta.TournamentID == nil {
		return domain.Errorf(domain.CodeNotFound, "not an arena game")
	}
	if _, err := h.tournaments.Berserk(ctx, id.UserID, *meta.TournamentID, meta.GameID); err != nil {
		e := web.AsError(err)
		if e.Code == domain.CodeInternal {
			return err
		}
		return h.renderGame(c, meta.GameID, false, e.Message)
	}
	return c.Redirect(http.StatusSeeOther, "/game/"+meta.GameID)
}

// gameMove is the page's move button: the player's own choice comes back
// to their page only.
func (h *gamePages) gameMove(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if column := c.FormValue("column"); column != "" {
		return h.gameDrop(c, id, column)
	}
	choice := c.FormValue("move")
	move, _ := json.Marshal(choice)
	_, err = h.games.Act(c.Request().Context(), id.UserID, c.Param("id"), game.Action{Type: "move", Move: move})
	if err != nil {
		e := web.AsError(err)
		if e.Code == domain.CodeInternal {
			return err
		}
		return web.Render(c, http.StatusOK, views.MyChoice("", 0, e.Message))
	}
	round := 0
	if view, err := h.games.PublicState(c.Request().Context(), c.Param("id")); err == nil {
		round = view.Base().Round.Number
	}
	return web.Render(c, http.StatusOK, views.MyChoice(choice, round, ""))
}

// gameDrop is a Connect Four drop button: the board itself changes through
// the live stream; the answer is only why a drop was refused.
func (h *gamePages) gameDrop(c echo.Context, id *web.Identity, column string) error {
	n, err := strconv.Atoi(column)
	if err != nil {
		return web.Render(c, http.StatusOK, views.MoveStatus("Choose one of the columns."))
	}
	move, _ := json.Marshal(map[string]int{"column": n})
	if _, err := h.games.Act(c.Request().Context(), id.UserID, c.Param("id"), game.Action{Type: "move", Move: move}); err != nil {
		e := web.AsError(err)
		if e.Code == domain.CodeInternal {
			return err
		}
		return web.Render(c, http.StatusOK, views.MoveStatus(dropRefusal(e, n)))
	}
	return web.Render(c, http.StatusOK, views.MoveStatus(""))
}

// dropRefusal says why a drop into column (0 at the left) was refused, in
// the page's words: columns are numbered from 1 there.
func dropRefusal(e *domain.Error, column int) string {
	switch e.Message {
	case rules.ColumnFull:
		return "Column " + strconv.Itoa(column+1) + " is full: choose another one."
	case rules.TurnTimeUp:
		return "Your time for this move ran out."
	}
	return sentence(e.Message)
}

// gameRematch asks for (or accepts) a rematch, or withdraws the request,
// and answers the rematch panel as it now stands; the other player's page
// gets it live.
func (h *gamePages) gameRematch(withdraw bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := requireLogin(c)
		if id == nil {
			return err
		}
		ctx := c.Request().Context()
		if withdraw {
			_, err = h.games.CancelRematch(ctx, id.UserID, c.Param("id"))
		} else {
			_, err = h.games.RequestRematch(ctx, id.UserID, c.Param("id"))
		}
		if e := web.AsError(err); err != nil && e.Code == domain.CodeInternal {
			return err
		}
		g, verr := h.gameViews.GameView(ctx, c.Param("id"), id)
		if verr != nil {
			return verr
		}
		if err != nil && g.Rematch != nil {
			g.Rematch.Error = web.AsError(err).Message
			if words, ok := stakeRefusal(web.AsError(err)); ok {
				g.Rematch.Error, g.Rematch.ShortOfFunds = words, true
			}
		}
		return web.Render(c, http.StatusOK, views.RematchPanel(g))
	}
}

// gameChat posts the page's chat form; the message itself arrives through
// the live stream like everyone else's.
func (h *gamePages) gameChat(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	_, err = h.chat.Send(c.Request().Context(), id.UserID, "game", c.Param("id"), c.FormValue("text"))
	if err != nil {
		e := web.AsError(err)
		if e.Code == domain.CodeInternal {
			return err
		}
		msg := e.Message
		if reason := e.Fields["text"]; reason != "" {
			msg = "The message " + reason + "."
		}
		return web.Render(c, http.StatusOK, views.ChatError(msg))
	}
	c.Response().Header().Set("HX-Trigger", "chat-sent")
	return web.Render(c, http.StatusOK, views.ChatError(""))
}

// stakeRefusal says in words why a stake was refused when the player's own
// balance does not cover it (an INSUFFICIENT_FUNDS naming both amounts):
// what the game needs and what they have. The page adds where to deposit.
func stakeRefusal(e *domain.Error) (string, bool) {
	if e.Code != domain.CodeInsufficientFunds {
		return "", false
	}
	needed, ok := e.Extra["neededMinor"].(int64)
	available, ok2 := e.Extra["availableMinor"].(int64)
	if !ok || !ok2 {
		return "", false
	}
	return "This game needs " + money.FormatUSDC(needed) + " USDC and you have " + money.FormatUSDC(available) +
		" USDC available.", true
}

func (h *gamePages) playView(ctx context.Context, form views.PlayForm, errMsg string) (views.PlayView, error) {
	v := views.PlayView{Form: form, Error: errMsg, Bots: h.bots != nil}
	for _, t := range rules.Available() {
		v.Types = append(v.Types, views.GameTypeOption{Type: t.GameType, Name: t.Name})
	}
	lobbies, err := h.games.Lobbies(ctx, 20)
	if err != nil {
		return v, err
	}
	for _, l := range lobbies {
		if l.Queued > 0 {
			v.Lobbies = append(v.Lobbies, views.LobbyLine{ID: l.ID, GameType: l.GameType, Stake: money.FormatUSDC(l.StakeMinor), Queued: l.Queued})
		}
	}
	return v, nil
}

// playerPage runs a page for signed-in players who are not in a game: the
// others go to sign in, or to their game.
func (h *gamePages) playerPage(c echo.Context, page func(id *web.Identity) error) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if cg, err := h.games.CurrentGameOf(c.Request().Context(), id.UserID); err != nil {
		return err
	} else if cg != nil {
		return c.Redirect(http.StatusSeeOther, "/game/"+cg.GameID)
	}
	return page(id)
}

func (h *gamePages) playPage(c echo.Context) error {
	return h.playerPage(c, func(*web.Identity) error {
		v, err := h.playView(c.Request().Context(), views.PlayForm{GameType: "rps", Stake: "0", Rounds: "3", RoundSeconds: "20"}, "")
		if err != nil {
			return err
		}
		return web.Render(c, http.StatusOK, views.Play(h.header.Page(c, "Play"), v))
	})
}

// playSubmit opens a lobby from the form and queues the player there.
func (h *gamePages) playSubmit(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	ctx := c.Request().Context()
	form := views.PlayForm{GameType: c.FormValue("gameType"), Stake: strings.TrimSpace(c.FormValue("stake")),
		Rounds: strings.TrimSpace(c.FormValue("rounds")), RoundSeconds: strings.TrimSpace(c.FormValue("roundSeconds"))}
	fail := func(err error) error {
		e := web.AsError(err)
		if e.Code == domain.CodeInternal {
			return err
		}
		msg := e.Message
		for field, reason := range e.Fields {
			msg = fieldLabel(field) + " " + reason + "."
		}
		v, verr := h.playView(ctx, form, msg)
		if verr != nil {
			return verr
		}
		if words, ok := stakeRefusal(e); ok {
			v.Error, v.ShortOfFunds = words, true
		}
		return web.Render(c, web.StatusOf(e.Code), views.Play(h.header.Page(c, "Play"), v))
	}
	stake, err := parseUSDC(form.Stake)
	if err != nil {
		return fail(err)
	}
	settings := map[string]int{}
	fields := map[string]string{"rounds": form.Rounds, "roundSeconds": form.RoundSeconds}
	if form.GameType == "connect4" {
		fields = map[string]string{"turnSeconds": form.RoundSeconds}
	}
	for key, value := range fields {
		if value == "" {
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return fail(domain.Invalid(map[string]string{"settings." + key: "must be a whole number"}))
		}
		settings[key] = n
	}
	raw, _ := json.Marshal(settings)
	l, err := h.games.CreateLobby(ctx, id.UserID, form.GameType, stake, raw)
	if err != nil {
		return fail(err)
	}
	return h.joinAndGo(c, id.UserID, l.ID, fail)
}

func (h *gamePages) joinAndGo(c echo.Context, userID, lobbyID string, fail func(error) error) error {
	res, err := h.games.JoinQueue(c.Request().Context(), userID, lobbyID)
	if err != nil {
		return fail(err)
	}
	if res.Status == "matched" {
		return c.Redirect(http.StatusSeeOther, "/game/"+res.GameID)
	}
	return c.Redirect(http.StatusSeeOther, "/play/wait/"+lobbyID)
}

func (h *gamePages) playJoin(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	return h.joinAndGo(c, id.UserID, c.Param("id"), func(err error) error {
		e := web.AsError(err)
		v, verr := h.playView(c.Request().Context(), views.PlayForm{GameType: "rps", Stake: "0"}, e.Message)
		if verr != nil {
			return verr
		}
		if words, ok := stakeRefusal(e); ok {
			v.Error, v.ShortOfFunds = words, true
		}
		return web.Render(c, web.StatusOf(e.Code), views.Play(h.header.Page(c, "Play"), v))
	})
}

// botSettings are the settings of a game against a demo bot: a person's
// pace, not the bots' own.
var botSettings = map[string]json.RawMessage{
	"rps":      json.RawMessage(`{"rounds": 3, "roundSeconds": 20}`),
	"connect4": json.RawMessage(`{"turnSeconds": 30}`),
}

// playBot challenges a demo bot to a free game: it accepts at once, or
// when its current game ends.
func (h *gamePages) playBot(c echo.Context) error {
	return h.playerPage(c, func(id *web.Identity) error {
		ctx := c.Request().Context()
		gameType := c.FormValue("gameType")
		settings, ok := botSettings[gameType]
		if h.bots == nil || !ok {
			return domain.Errorf(domain.CodeNotFound, "no demo bots play here")
		}
		bot, err := h.bots.Opponent(ctx)
		if err != nil {
			return err
		}
		ch, err := h.games.CreateChallenge(ctx, id.UserID, bot.ID, gameType, 0, settings)
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusSeeOther, "/play/challenge/"+ch.ID)
	})
}

// playChallengeWait waits for the challenged player to accept; once the
// challenge is answered it goes to the game, or back to the play page.
func (h *gamePages) playChallengeWait(c echo.Context) error {
	return h.playerPage(c, func(id *web.Identity) error {
		ctx := c.Request().Context()
		pending, err := h.games.Challenges(ctx, id.UserID)
		if err != nil {
			return err
		}
		for _, ch := range pending {
			if ch.ID != c.Param("id") || ch.FromUser != id.UserID {
				continue
			}
			to, err := h.users.ByID(ctx, ch.ToUser)
			if err != nil {
				return err
			}
			return web.Render(c, http.StatusOK, views.WaitingFor(h.header.Page(c, "Waiting for "+to.Username), ch.ID, to.Username))
		}
		return c.Redirect(http.StatusSeeOther, "/play") // answered: the play page, or the game (playerPage)
	})
}

func (h *gamePages) playChallengeCancel(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if _, err := h.games.RespondChallenge(c.Request().Context(), id.UserID, c.Param("id"), "cancel"); err != nil &&
		domain.ErrorCode(err) != domain.CodeConflict {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/play")
}

func (h *gamePages) playWait(c echo.Context) error {
	return h.playerPage(c, func(*web.Identity) error {
		return web.Render(c, http.StatusOK, views.Waiting(h.header.Page(c, "Waiting for an opponent"), c.Param("id")))
	})
}

func (h *gamePages) playLeave(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if err := h.games.LeaveQueue(c.Request().Context(), id.UserID, c.Param("id")); err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/play")
}
