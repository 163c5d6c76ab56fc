package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/integrity"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/ranking"
	"wager/domain/settlement"
	"wager/domain/tournament"
	"wager/domain/users"
	"wager/views"
	"wager/web"
)

// LiveViews renders games for the game page and for the live hub: the
// page's view model, the HTML fragments that live events send to pages,
// and the answer to a room join. It reads what everyone may see.
type LiveViews struct {
	games     *game.Service
	pots      *settlement.Service
	referee   *integrity.Referee
	ratings   *ranking.Service
	explorer  Explorer
	devWallet bool
	log       *slog.Logger
}

// NewLiveViews returns the game presenter.
func NewLiveViews(games *game.Service, pots *settlement.Service, reviews *integrity.Referee, ratings *ranking.Service, o Options, log *slog.Logger) *LiveViews {
	return &LiveViews{games: games, pots: pots, referee: reviews, ratings: ratings, explorer: o.Explorer(), devWallet: o.EmbeddedChain, log: log}
}

// gameView gathers what the game page shows; viewer may be nil.
func (v *LiveViews) gameView(ctx context.Context, gameID string, viewer *web.Identity) (views.GameView, error) {
	st, err := v.readGame(ctx, gameID)
	if err != nil {
		return views.GameView{}, err
	}
	return v.present(&st, viewer), nil
}

// gameState is what the game page shows of a game, as everyone may see it
// (and the bets, of which a viewer sees their own): read from the
// database for a page, and for a room's pages kept up to date from the
// room's events alone (see livePage).
type gameState struct {
	meta     game.Meta
	view     rules.View
	escrow   string // derived from the master key: not derived again for every render
	pot      settlement.Pot
	bets     *settlement.Bets // two-player games that started; nil for others
	betsHeld bool             // the bets wait for a review
	// Once the game is over: what it did to the ratings, its review when
	// its bets and market were held, its settlement's transfers, and
	// where its rematch stands.
	ratings   []game.RatingChange
	review    *integrity.Review
	transfers []settlement.Transfer
	rematch   *game.Rematch
}

// readGame reads what the game page shows: the game and its pot, its
// bets once it started, and what its end did once it is over.
func (v *LiveViews) readGame(ctx context.Context, gameID string) (gameState, error) {
	var st gameState
	var err error
	if st.meta, st.view, err = v.games.Snapshot(ctx, gameID); err != nil {
		return st, err
	}
	st.escrow = v.pots.EscrowAddress(st.meta.GameID).String()
	if st.pot, err = v.pots.PotFor(ctx, st.meta); err != nil {
		return st, err
	}
	if res := st.meta.Result; res != nil {
		if st.ratings, err = v.ratings.GameChanges(ctx, gameID); err != nil {
			return st, err
		}
		if res.ReviewHeld {
			if st.review, err = v.referee.Of(ctx, gameID); err != nil {
				return st, err
			}
		}
		if st.transfers, err = v.pots.Transfers(ctx, gameID); err != nil {
			return st, err
		}
		r, err := v.games.RematchOf(ctx, gameID)
		if err != nil {
			return st, err
		}
		st.rematch = &r
	}
	if len(st.meta.Players) == 2 && st.meta.Status != game.StatusWaiting {
		b, err := v.pots.BetsOf(ctx, gameID)
		if err != nil {
			return st, err
		}
		st.bets = &b
		st.betsHeld = slices.ContainsFunc(b.Bets, func(bet settlement.Bet) bool { return bet.Status == settlement.BetHeld })
	}
	return st, nil
}

// present is a game's page view for viewer (nil: the same for everyone).
func (v *LiveViews) present(s *gameState, viewer *web.Identity) views.GameView {
	meta, view := s.meta, s.view
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
		EscrowAddress: s.escrow, DevWallet: v.devWallet}
	if meta.TournamentID != nil {
		g.TournamentID = *meta.TournamentID
	}
	if st.Round.Deadline != nil && meta.Status == game.StatusActive {
		g.Deadline, _ = time.Parse(time.RFC3339Nano, *st.Round.Deadline)
	}
	c4, _ := view.(*rules.C4View)
	for _, p := range meta.Players {
		g.Players = append(g.Players, views.GamePlayer{UserID: p.UserID, Username: p.Username, Seat: p.Seat,
			Score: st.Scores[p.UserID], Submitted: st.Submitted[p.UserID], OnTurn: c4 != nil && c4.Turn != nil && *c4.Turn == p.UserID})
	}
	if c4 != nil {
		g.Board = boardView(c4, meta.Players)
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
	p := s.pot
	g.Pot = views.PotView{PlayerPot: money.FormatUSDC(p.PlayerPotMinor), SpectatorPot: money.FormatUSDC(p.SpectatorPotMinor),
		Total: money.FormatUSDC(p.TotalMinor), WinnerGets: money.FormatUSDC(p.WinnerGetsMinor),
		Free: meta.StakeMinor == 0, Donations: p.SpectatorPotMinor > 0}
	if res := meta.Result; res != nil {
		g.Result = resultWords(meta, st.Scores)
		g.Result.Players = playerResults(meta, s.ratings)
		if res.ReviewHeld {
			g.Result.Review = reviewWords(s.review)
		}
		for _, t := range s.transfers {
			tv := views.TransferView{Kind: t.Kind, Amount: money.FormatUSDC(t.AmountMinor), Status: t.Status}
			if t.Signature != nil {
				tv.Signature, tv.Link = *t.Signature, v.explorer.URL("tx", *t.Signature)
			}
			g.Settlement = append(g.Settlement, tv)
		}
		if r := s.rematch; r != nil {
			g.Rematch = &views.RematchView{RequestedBy: r.RequestedBy, NewGameID: deref(r.NewGameID)}
			if len(r.RequestedBy) > 0 {
				g.Rematch.Asker = names[r.RequestedBy[0]]
			}
		}
	}
	if viewer != nil {
		g.Me = viewer.UserID
		_, g.IsPlayer = names[viewer.UserID]
	}
	if s.bets != nil {
		g.Bets = betsView(*s.bets, s.betsHeld, names, g.Me)
	}
	return g
}

// boardView is a Connect Four board with its pieces, winning line and
// moves.
func boardView(v *rules.C4View, players []game.Seat) *views.BoardView {
	seats, names := map[string]int{}, map[string]string{}
	for _, p := range players {
		seats[p.UserID], names[p.UserID] = p.Seat, p.Username
	}
	b := &views.BoardView{Turn: deref(v.Turn), LastRow: -1, LastColumn: -1}
	if n := len(v.History); n > 0 {
		b.LastRow, b.LastColumn = v.History[n-1].Row, v.History[n-1].Column
	}
	win := map[[2]int]bool{}
	for _, cell := range v.Line {
		win[cell] = true
	}
	for r, row := range v.Board {
		cells := make([]views.CellView, len(row))
		for c, owner := range row {
			cells[c] = views.CellView{Seat: -1, Win: win[[2]int{r, c}]}
			if owner != "" {
				cells[c].Seat, cells[c].Username = seats[owner], names[owner]
			}
		}
		b.Rows = append(b.Rows, cells)
	}
	for i := len(v.History) - 1; i >= 0; i-- {
		m := v.History[i]
		b.Moves = append(b.Moves, views.MoveView{Number: m.MoveNumber, Username: names[m.UserID], Column: m.Column + 1})
	}
	return b
}

// resultWords says how a finished game ended, for every status and game
// type: who won and how (the score, a resignation, a timeout, four in a
// row), what the winner received and the fee; for a draw or a
// cancellation, what went back to whom.
func resultWords(meta game.Meta, scores map[string]int) *views.ResultView {
	res := meta.Result
	var winner, loser string
	for _, p := range meta.Players {
		if res.WinnerID != nil && p.UserID == *res.WinnerID {
			winner = p.Username
		} else {
			loser = p.Username
		}
	}
	r := &views.ResultView{Winner: winner}
	switch {
	case winner == "":
		r.Heading = "Draw"
		if meta.Status == game.StatusCancelled {
			r.Heading = "Cancelled"
		}
	case res.Reason == "resign":
		r.How = loser + " resigned."
	case res.Reason == "timeout":
		r.How = loser + " ran out of time."
	case res.Reason == "connect4":
		r.How = winner + " connected four in a row."
	case res.Reason == "score":
		w, l := scores[deref(res.WinnerID)], 0
		for id, s := range scores {
			if id != deref(res.WinnerID) {
				l = s
			}
		}
		r.How = winner + " won " + strconv.Itoa(w) + " rounds to " + strconv.Itoa(l) + "."
	default:
		r.How = winner + " won (" + res.Reason + ")."
	}
	if winner == "" {
		switch res.Reason {
		case "abandoned":
			r.How = "Nobody moved before the time ran out."
		case "board-full":
			r.How = "The board filled up without four in a row."
		default:
			r.How = "Nobody won (" + res.Reason + ")."
		}
	}
	usdc := func(minor int64) string { return money.FormatUSDC(minor) + " USDC" }
	switch {
	case res.PotMinor == 0:
		r.Money = "A free game: no stakes, no fee."
	case winner != "":
		r.Money = winner + " receives " + usdc(res.PayoutMinor) + ": the pot of " + usdc(res.PotMinor) +
			" less the platform's fee of " + usdc(res.FeeMinor) + "."
	case res.SpectatorPotMinor == 0:
		r.Money = "Each player's stake of " + usdc(res.PlayerPotMinor/2) + " went back to them."
	case res.PlayerPotMinor == 0:
		r.Money = "The donations (" + usdc(res.SpectatorPotMinor) + ") went back to the donors."
	default:
		r.Money = "Each player's stake of " + usdc(res.PlayerPotMinor/2) + " went back to them, and the donations (" +
			usdc(res.SpectatorPotMinor) + ") to the donors."
	}
	return r
}

// playerResults says a finished game from each player's side, in the
// first person, with the change to their rating (Lichess shows both).
func playerResults(meta game.Meta, changes []game.RatingChange) []views.PlayerResult {
	var out []views.PlayerResult
	for _, p := range meta.Players {
		pr := views.PlayerResult{UserID: p.UserID, Outcome: "Draw"}
		switch {
		case meta.Status == game.StatusCancelled:
			pr.Outcome = "Cancelled"
		case meta.Result.WinnerID == nil:
		case *meta.Result.WinnerID == p.UserID:
			pr.Outcome = "You won"
		default:
			pr.Outcome = "You lost"
		}
		for _, c := range changes {
			if c.UserID == p.UserID {
				pr.Rating = ratingWords(c)
			}
		}
		out = append(out, pr)
	}
	return out
}

// ratingWords is a player's rating after a game and the change:
// "Your rating: 1512 (+12)", "Your rating: 1492 (-8, provisional)".
func ratingWords(c game.RatingChange) string {
	d := c.Delta()
	change := strconv.Itoa(d)
	if d >= 0 {
		change = "+" + change
	}
	if c.Provisional {
		change += ", provisional"
	}
	return "Your rating: " + strconv.Itoa(int(math.Round(c.After))) + " (" + change + ")"
}

// reviewWords says where the review of a held game's bets and market
// stands.
func reviewWords(r *integrity.Review) string {
	if r == nil {
		return ""
	}
	switch r.Status {
	case integrity.StatusReleased:
		return "The bets and the market on this game were held for review, and released: they were paid as the game ended."
	case integrity.StatusVoided:
		return "The bets and the market on this game were held for review, and voided: every bet was refunded in full and every share paid 0.5 USDC."
	}
	why := "the game ended by resignation or on time with more bet or traded on it than its stakes"
	if r.Reason == integrity.ReasonLinked {
		why = "someone who bet on or traded this game is linked to one of its players"
	}
	return "The result is under review: " + why + ", so its bets and market are held until an admin pays them as the game ended " +
		"or refunds them. The players' payout is not held."
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func chatLine(m chat.Message) views.ChatLine {
	l := views.ChatLine{ID: m.ID, Text: m.Text, At: m.CreatedAt}
	if role, ok := m.Metadata["role"].(string); ok {
		l.Role = role
	}
	if m.Sender != nil {
		l.UserID, l.Username = m.Sender.UserID, m.Sender.Username
	}
	return l
}

// gamePages serve the play, game and TV pages and their forms.
type gamePages struct {
	users       *users.Service
	games       *game.Service
	chat        *chat.Service
	market      *market.Service
	tournaments *tournament.Service
	bots        DemoBots
	gameViews   *LiveViews
	chrome      *chrome
}

func (h *gamePages) gamePage(c echo.Context) error {
	return h.renderGamePage(c, c.Param("id"), false)
}

// tvPage follows the most-watched live game; the page comes back here for
// the next one when it ends.
func (h *gamePages) tvPage(c echo.Context) error {
	// While an arena runs, TV shows its leader's game.
	if id, err := h.tournaments.TopGame(c.Request().Context()); err != nil {
		return err
	} else if id != "" {
		return h.renderGamePage(c, id, true)
	}
	live, err := h.games.Live(c.Request().Context(), 1)
	if err != nil {
		return err
	}
	if len(live) == 0 {
		return web.Render(c, http.StatusOK, views.TVOff(h.chrome.pageFor(c, "TV")))
	}
	return h.renderGamePage(c, live[0].GameID, true)
}

func (h *gamePages) renderGamePage(c echo.Context, gameID string, tv bool) error {
	ctx := c.Request().Context()
	viewer := web.IdentityOf(c)
	g, err := h.gameViews.gameView(ctx, gameID, viewer)
	if err != nil {
		return err
	}
	g.TV = tv
	// The market is on the page as it opens; live, its own events swap it
	// (so gameView, which renders every other live event, leaves it out).
	if g.Bets != nil {
		m, err := h.market.Market(ctx, g.GameID)
		if err != nil {
			return err
		}
		g.Market = marketView(m)
		if g.Me != "" && !g.IsPlayer {
			if g.MarketMine, err = marketMine(ctx, h.market, g.Me, m); err != nil {
				return err
			}
		}
	}
	if viewer == nil {
		g.Deadline = time.Time{} // the page does not follow the game: no clock runs down on it
	} else {
		msgs, err := h.chat.History(ctx, viewer.UserID, "game", g.GameID, 50, 0)
		if err != nil {
			return err
		}
		for i := len(msgs) - 1; i >= 0; i-- {
			g.Chat = append(g.Chat, chatLine(msgs[i]))
		}
	}
	title := views.GameTitle(g)
	if tv {
		title = "TV: " + title
	}
	return web.Render(c, http.StatusOK, views.GamePage(h.chrome.pageFor(c, title), g))
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
		g, verr := h.gameViews.gameView(ctx, c.Param("id"), id)
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
		return web.Render(c, http.StatusOK, views.Play(h.chrome.pageFor(c, "Play"), v))
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
		return web.Render(c, web.StatusOf(e.Code), views.Play(h.chrome.pageFor(c, "Play"), v))
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
		return web.Render(c, web.StatusOf(e.Code), views.Play(h.chrome.pageFor(c, "Play"), v))
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
			return web.Render(c, http.StatusOK, views.WaitingFor(h.chrome.pageFor(c, "Waiting for "+to.Username), ch.ID, to.Username))
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
		return web.Render(c, http.StatusOK, views.Waiting(h.chrome.pageFor(c, "Waiting for an opponent"), c.Param("id")))
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
