package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/money"
	"wager/views"
	"wager/web"
)

// publicRPS is the part of a game's public view the page shows.
type publicRPS struct {
	Players []string `json:"players"`
	Round   struct {
		Number   int    `json:"number"`
		Deadline string `json:"deadline"`
	} `json:"round"`
	Scores       map[string]int  `json:"scores"`
	Submitted    map[string]bool `json:"submitted"`
	Rounds       int             `json:"rounds"`
	RoundSeconds int             `json:"roundSeconds"`
	History      []struct {
		Round       int                `json:"round"`
		Choices     map[string]*string `json:"choices"`
		Salts       map[string]*string `json:"salts"`
		Commitments map[string]*string `json:"commitments"`
		WinnerID    *string            `json:"winnerId"`
		Reason      string             `json:"reason"`
	} `json:"history"`
}

// gameView gathers what the game page shows; viewer may be nil.
func (a *App) gameView(ctx context.Context, gameID string, viewer *web.Identity) (views.GameView, error) {
	meta, public, err := a.Games.Snapshot(ctx, gameID)
	if err != nil {
		return views.GameView{}, err
	}
	var st publicRPS
	if b, err := json.Marshal(public); err == nil {
		json.Unmarshal(b, &st)
	}
	names := map[string]string{}
	for _, p := range meta.Players {
		names[p.UserID] = p.Username
	}
	g := views.GameView{GameID: meta.GameID, GameType: meta.GameType, Status: meta.Status, Round: st.Round.Number,
		Rounds: st.Rounds, RoundSeconds: st.RoundSeconds, Spectators: meta.SpectatorCount, Seq: meta.LastSeq,
		EscrowAddress: a.Pot.EscrowAddress(meta.GameID).String(), DevWallet: a.Config.EmbeddedChain()}
	if d, err := time.Parse(time.RFC3339Nano, st.Round.Deadline); err == nil && meta.Status == game.StatusActive {
		g.Deadline = d
	}
	for _, p := range meta.Players {
		g.Players = append(g.Players, views.GamePlayer{UserID: p.UserID, Username: p.Username,
			Score: st.Scores[p.UserID], Submitted: st.Submitted[p.UserID]})
	}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	for i := len(st.History) - 1; i >= 0; i-- { // newest first
		h := st.History[i]
		r := views.RoundView{Round: h.Round, Reason: h.Reason, Winner: names[str(h.WinnerID)]}
		for _, p := range meta.Players {
			r.Choices = append(r.Choices, views.RevealView{Username: p.Username, Choice: str(h.Choices[p.UserID]),
				Salt: str(h.Salts[p.UserID]), Commitment: str(h.Commitments[p.UserID])})
		}
		g.History = append(g.History, r)
	}
	p, err := a.Pot.PotOf(ctx, gameID)
	if err != nil {
		return g, err
	}
	g.Pot = views.PotView{PlayerPot: money.FormatUSDC(p.PlayerPotMinor), SpectatorPot: money.FormatUSDC(p.SpectatorPotMinor),
		Total: money.FormatUSDC(p.TotalMinor), WinnerGets: money.FormatUSDC(p.WinnerGetsMinor)}
	if meta.Status == game.StatusCompleted || meta.Status == game.StatusCancelled {
		var res struct {
			WinnerID    *string `json:"winnerId"`
			Reason      string  `json:"reason"`
			PayoutMinor int64   `json:"payoutMinor"`
			FeeMinor    int64   `json:"feeMinor"`
		}
		json.Unmarshal(meta.Result, &res)
		g.Result = &views.ResultView{Winner: names[str(res.WinnerID)], Reason: res.Reason, Draw: res.WinnerID == nil,
			Payout: money.FormatUSDC(res.PayoutMinor), Fee: money.FormatUSDC(res.FeeMinor)}
		transfers, err := a.Pot.Transfers(ctx, gameID)
		if err != nil {
			return g, err
		}
		for _, t := range transfers {
			tv := views.TransferView{Kind: t.Kind, Amount: money.FormatUSDC(t.AmountMinor), Status: t.Status}
			if t.Signature != nil {
				tv.Signature, tv.Link = *t.Signature, a.explorerURL("tx", *t.Signature)
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
	g, err := a.gameView(ctx, c.Param("id"), viewer)
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
	if _, public, err := a.Games.Snapshot(c.Request().Context(), c.Param("id")); err == nil {
		if r, ok := public["round"].(map[string]any); ok {
			round, _ = r["number"].(int)
		}
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

// renderLive is the HTML audience's renderer: for each game event, the
// panels it may change, rendered once and sent to every page in the room.
// It reads only what everyone may see.
func (a *App) renderLive(ctx context.Context, ev game.Event) []byte {
	var buf bytes.Buffer
	if ev.Name == "game:chat:message" {
		var m chat.Message
		if json.Unmarshal(ev.Data, &m) != nil {
			return nil
		}
		views.ChatAppend(chatLine(m)).Render(ctx, &buf)
		views.LiveSeq(ev.Seq).Render(ctx, &buf)
		return buf.Bytes()
	}
	g, err := a.gameView(ctx, ev.GameID, nil)
	if err != nil {
		a.log.Warn("render live event", "game", ev.GameID, "event", ev.Name, "err", err)
		return nil
	}
	g.Seq = ev.Seq
	if err := views.Live(g).Render(ctx, &buf); err != nil {
		return nil
	}
	return buf.Bytes()
}
