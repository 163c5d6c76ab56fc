package livepage

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"wager/domain"
	"wager/domain/chat"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/integrity"
	"wager/domain/money"
	"wager/domain/ranking"
	"wager/domain/settlement"
	"wager/views"
	"wager/web"
)

// Games renders games for the game page and for the live hub: the
// page's view model, the HTML fragments that live events send to pages,
// and the answer to a room join. It reads what everyone may see.
type Games struct {
	games     *game.Service
	pots      *settlement.Service
	referee   *integrity.Referee
	ratings   *ranking.Service
	explorer  Explorer
	devWallet bool
	log       *slog.Logger
}

// NewGames returns the game presenter: explorer links the settlement's
// transfers, devWallet offers the embedded chain's dev wallet.
func NewGames(games *game.Service, pots *settlement.Service, reviews *integrity.Referee, ratings *ranking.Service,
	explorer Explorer, devWallet bool, log *slog.Logger) *Games {
	return &Games{games: games, pots: pots, referee: reviews, ratings: ratings, explorer: explorer, devWallet: devWallet, log: log}
}

// GameView gathers what the game page shows; viewer may be nil. The
// error is the read's.
func (v *Games) GameView(ctx context.Context, gameID string, viewer *web.Identity) (views.GameView, error) {
	st, err := v.readGame(ctx, gameID)
	if err != nil {
		return views.GameView{}, err
	}
	if st.delay > 0 && (viewer == nil || !slices.ContainsFunc(st.meta.Players, func(p game.Seat) bool { return p.UserID == viewer.UserID })) {
		// A spectator sees the game as late as its room shows it.
		g, err := v.games.Game(ctx, st.meta.GameID)
		if err != nil {
			return views.GameView{}, err
		}
		late, err := v.games.SpectatorState(ctx, g)
		switch {
		case err == nil:
			st.view, st.meta.LastSeq = late, late.Base().Seq
		case domain.ErrorCode(err) != domain.CodeGameNotActive: // over since it was read: nothing is late
			return views.GameView{}, err
		}
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
	// delay is how late its spectators see the game while it is active.
	delay time.Duration
}

// readGame reads what the game page shows: the game and its pot, its
// bets once it started, and what its end did once it is over.
func (v *Games) readGame(ctx context.Context, gameID string) (gameState, error) {
	var st gameState
	var err error
	if st.meta, st.view, err = v.games.Snapshot(ctx, gameID); err != nil {
		return st, err
	}
	st.delay = v.games.SpectatorDelayOf(st.meta)
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
func (v *Games) present(s *gameState, viewer *web.Identity) views.GameView {
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
	if meta.Status == game.StatusActive {
		g.SpectatorDelay = s.delay
	}
	if meta.TournamentID != nil {
		g.TournamentID = *meta.TournamentID
	}
	if st.Round.Deadline != nil && meta.Status == game.StatusActive {
		g.Deadline, _ = time.Parse(time.RFC3339Nano, *st.Round.Deadline)
	}
	c4, _ := view.(*rules.C4View)
	berserk := view.Base().Berserk
	for _, p := range meta.Players {
		pl := views.GamePlayer{UserID: p.UserID, Username: p.Username, Seat: p.Seat,
			Score: st.Scores[p.UserID], Submitted: st.Submitted[p.UserID], OnTurn: c4 != nil && c4.Turn != nil && *c4.Turn == p.UserID,
			Bot: p.Bot, BerserkSeconds: berserk[p.UserID]}
		// In rock, paper, scissors a player who went berserk has their own,
		// sooner end of the round, while they have not chosen.
		if pl.BerserkSeconds > 0 && c4 == nil && !pl.Submitted && !g.Deadline.IsZero() {
			pl.BerserkDeadline = g.Deadline.Add(-time.Duration(st.RoundSeconds-pl.BerserkSeconds) * time.Second)
		}
		g.Players = append(g.Players, pl)
	}
	if c4 != nil {
		g.Board = boardView(c4, meta.Players)
	}
	for i := len(st.History) - 1; i >= 0; i-- { // newest first
		h := st.History[i]
		r := views.RoundView{Round: h.Round, Reason: roundReasonWords(h.Reason), Winner: names[Deref(h.WinnerID)]}
		for _, p := range meta.Players {
			r.Choices = append(r.Choices, views.RevealView{Username: p.Username, Choice: Deref(h.Choices[p.UserID]),
				Salt: Deref(h.Salts[p.UserID]), Commitment: h.Commitments[p.UserID]})
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
			g.Rematch = &views.RematchView{RequestedBy: r.RequestedBy, NewGameID: Deref(r.NewGameID)}
			if len(r.RequestedBy) > 0 {
				g.Rematch.Asker = names[r.RequestedBy[0]]
			}
		}
	}
	if viewer != nil {
		g.Me = viewer.UserID
		_, g.IsPlayer = names[viewer.UserID]
		g.CanBerserk = g.IsPlayer && g.TournamentID != "" && meta.Status == game.StatusActive && berserk[g.Me] == 0 && !movedIn(view, g.Me)
	}
	if s.bets != nil {
		g.Bets = betsView(*s.bets, s.betsHeld, names, g.Me)
	}
	return g
}

// movedIn reports whether the player moved in the game: a Connect Four
// move of theirs, or a round of rock, paper, scissors played or chosen.
func movedIn(view rules.View, userID string) bool {
	switch v := view.(type) {
	case *rules.C4View:
		return slices.ContainsFunc(v.History, func(m rules.C4Move) bool { return m.UserID == userID })
	case *rules.RPSView:
		return len(v.History) > 0 || v.Submitted[userID]
	}
	return true
}

// boardView is a Connect Four board with its pieces, winning line and
// moves.
func boardView(v *rules.C4View, players []game.Seat) *views.BoardView {
	seats, names := map[string]int{}, map[string]string{}
	for _, p := range players {
		seats[p.UserID], names[p.UserID] = p.Seat, p.Username
	}
	b := &views.BoardView{Turn: Deref(v.Turn), LastRow: -1, LastColumn: -1}
	if n := len(v.History); n > 0 {
		b.LastRow, b.LastColumn = v.History[n-1].Row, v.History[n-1].Column
	}
	win := map[[2]int]bool{}
	if v.Line != nil {
		for _, cell := range *v.Line {
			win[cell] = true
		}
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
		w, l := scores[Deref(res.WinnerID)], 0
		for id, s := range scores {
			if id != Deref(res.WinnerID) {
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

// Deref is *s, or "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ChatLine is a chat message as the chat panel shows it.
func ChatLine(m chat.Message) views.ChatLine {
	l := views.ChatLine{ID: m.ID, Text: m.Text, At: m.CreatedAt}
	if role, ok := m.Metadata["role"].(string); ok {
		l.Role = role
	}
	if m.Sender != nil {
		l.UserID, l.Username = m.Sender.UserID, m.Sender.Username
	}
	return l
}

// roundReasonWords says how a revealed round ended when it was not played
// out: nothing for a round both played.
func roundReasonWords(reason string) string {
	switch reason {
	case "timeout":
		return "one player did not choose in time"
	case "abandoned":
		return "neither player chose in time"
	}
	return ""
}
