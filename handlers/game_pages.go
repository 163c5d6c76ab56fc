package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/pot"
	"wager/views"
	"wager/web"
	"wager/web/live"
)

// LiveViews renders games for the game page and for the live hub: the
// page's view model, the HTML fragments that live events send to pages,
// and the answer to a room join. It reads what everyone may see.
type LiveViews struct {
	games     *game.Service
	pots      *pot.Service
	explorer  Explorer
	devWallet bool
	log       *slog.Logger
}

// NewLiveViews returns the game presenter.
func NewLiveViews(games *game.Service, pots *pot.Service, o Options, log *slog.Logger) *LiveViews {
	return &LiveViews{games: games, pots: pots, explorer: o.Explorer(), devWallet: o.EmbeddedChain, log: log}
}

// gameView gathers what the game page shows; viewer may be nil. It reads
// the game and its pot (two queries), and the settlement once it is over.
func (v *LiveViews) gameView(ctx context.Context, gameID string, viewer *web.Identity) (views.GameView, error) {
	meta, view, err := v.games.Snapshot(ctx, gameID)
	if err != nil {
		return views.GameView{}, err
	}
	st, _ := view.(*rules.RPSView)
	if st == nil {
		st = &rules.RPSView{ViewBase: *view.Base()}
	}
	names := map[string]string{}
	for _, p := range meta.Players {
		names[p.UserID] = p.Username
	}
	g := views.GameView{GameID: meta.GameID, GameType: meta.GameType, Status: meta.Status, Round: st.Round.Number,
		Rounds: st.Rounds, RoundSeconds: st.RoundSeconds, Spectators: meta.SpectatorCount, Seq: meta.LastSeq,
		EscrowAddress: v.pots.EscrowAddress(meta.GameID).String(), DevWallet: v.devWallet}
	if st.Round.Deadline != nil && meta.Status == game.StatusActive {
		g.Deadline, _ = time.Parse(time.RFC3339Nano, *st.Round.Deadline)
	}
	for _, p := range meta.Players {
		g.Players = append(g.Players, views.GamePlayer{UserID: p.UserID, Username: p.Username,
			Score: st.Scores[p.UserID], Submitted: st.Submitted[p.UserID]})
	}
	for i := len(st.History) - 1; i >= 0; i-- { // newest first
		h := st.History[i]
		r := views.RoundView{Round: h.Round, Reason: h.Reason, Winner: names[deref(h.WinnerID)]}
		for _, p := range meta.Players {
			r.Choices = append(r.Choices, views.RevealView{Username: p.Username, Choice: deref(h.Choices[p.UserID]),
				Salt: deref(h.Salts[p.UserID]), Commitment: h.Commitments[p.UserID]})
		}
		g.History = append(g.History, r)
	}
	p, err := v.pots.PotFor(ctx, meta)
	if err != nil {
		return g, err
	}
	g.Pot = views.PotView{PlayerPot: money.FormatUSDC(p.PlayerPotMinor), SpectatorPot: money.FormatUSDC(p.SpectatorPotMinor),
		Total: money.FormatUSDC(p.TotalMinor), WinnerGets: money.FormatUSDC(p.WinnerGetsMinor)}
	if res := meta.Result; res != nil {
		g.Result = &views.ResultView{Winner: names[deref(res.WinnerID)], Reason: res.Reason, Draw: res.WinnerID == nil,
			Payout: money.FormatUSDC(res.PayoutMinor), Fee: money.FormatUSDC(res.FeeMinor)}
		transfers, err := v.pots.Transfers(ctx, gameID)
		if err != nil {
			return g, err
		}
		for _, t := range transfers {
			tv := views.TransferView{Kind: t.Kind, Amount: money.FormatUSDC(t.AmountMinor), Status: t.Status}
			if t.Signature != nil {
				tv.Signature, tv.Link = *t.Signature, v.explorer.URL("tx", *t.Signature)
			}
			g.Settlement = append(g.Settlement, tv)
		}
	}
	if viewer != nil {
		g.Me = viewer.UserID
		_, g.IsPlayer = names[viewer.UserID]
	}
	return g, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Events implements live.Pages: a chat message is appended to the chat;
// any other event swaps every panel it may change, rendered once for the
// batch (at its last such event) from the game as it is now.
func (v *LiveViews) Events(ctx context.Context, gameID string, evs []live.Event) [][]byte {
	out := make([][]byte, len(evs))
	last := -1
	for i, ev := range evs {
		if ev.Name != chat.EventMessage {
			last = i
			continue
		}
		var m chat.Message
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			v.log.Warn("render a live chat message", "game", gameID, "seq", ev.Seq, "err", err)
			continue
		}
		var buf bytes.Buffer
		views.ChatAppend(chatLine(m)).Render(ctx, &buf)
		views.LiveSeq(ev.Seq).Render(ctx, &buf)
		out[i] = buf.Bytes()
	}
	if last < 0 {
		return out
	}
	g, err := v.gameView(ctx, gameID, nil)
	if err != nil {
		v.log.Warn("render live event", "game", gameID, "event", evs[last].Name, "err", err)
		return out
	}
	g.Seq = evs[last].Seq
	var buf bytes.Buffer
	if err := views.Live(g).Render(ctx, &buf); err != nil {
		v.log.Warn("render live event", "game", gameID, "event", evs[last].Name, "err", err)
		return out
	}
	out[last] = buf.Bytes()
	return out
}

// Crowd implements live.Pages.
func (v *LiveViews) Crowd(count int) []byte {
	var buf bytes.Buffer
	views.SpectatorCount(count).Render(context.Background(), &buf)
	return buf.Bytes()
}

// Join implements live.Rooms: the state of an active game and whether the
// user plays in it (NOT_FOUND, GAME_NOT_ACTIVE).
func (v *LiveViews) Join(ctx context.Context, gameID, userID string) (live.Joined, error) {
	g, err := v.games.Game(ctx, gameID)
	if err != nil {
		return live.Joined{}, err
	}
	view, err := v.games.ActiveState(g)
	if err != nil {
		return live.Joined{}, err
	}
	state, err := json.Marshal(view)
	if err != nil {
		return live.Joined{}, fmt.Errorf("encode the state of game %s: %w", g.ID, err)
	}
	return live.Joined{State: state, Seq: g.Seq, Player: slices.Contains(g.Players, userID)}, nil
}

func chatLine(m chat.Message) views.ChatLine {
	l := views.ChatLine{ID: m.ID, Text: m.Text, At: m.CreatedAt}
	if role, ok := m.Metadata["role"].(string); ok {
		l.Role = role
	}
	if m.Sender != nil {
		l.Username = m.Sender.Username
	}
	return l
}

func (a *App) gamePage(c echo.Context) error {
	ctx := c.Request().Context()
	viewer := web.IdentityOf(c)
	g, err := a.Views.gameView(ctx, c.Param("id"), viewer)
	if err != nil {
		return err
	}
	if viewer != nil {
		msgs, err := a.Chat.History(ctx, viewer.UserID, "game", g.GameID, 50, 0)
		if err != nil {
			return err
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			g.Chat = append(g.Chat, chatLine(msgs[i]))
		}
	}
	return web.Render(c, http.StatusOK, views.GamePage(a.pageFor(c, views.GameTitle(g)), g))
}

// gameMove is the page's move button: the player's own choice comes back
// to their page only.
func (a *App) gameMove(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	choice := c.FormValue("move")
	move, _ := json.Marshal(choice)
	_, err = a.Games.Act(c.Request().Context(), id.UserID, c.Param("id"), game.Action{Type: "move", Move: move})
	if err != nil {
		e := web.AsError(err)
		if e.Code == domain.CodeInternal {
			return err
		}
		return web.Render(c, http.StatusOK, views.MyChoice("", 0, e.Message))
	}
	round := 0
	if view, err := a.Games.PublicState(c.Request().Context(), c.Param("id")); err == nil {
		round = view.Base().Round.Number
	}
	return web.Render(c, http.StatusOK, views.MyChoice(choice, round, ""))
}

// gameChat posts the page's chat form; the message itself arrives through
// the live stream like everyone else's.
func (a *App) gameChat(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	_, err = a.Chat.Send(c.Request().Context(), id.UserID, "game", c.Param("id"), c.FormValue("text"))
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
