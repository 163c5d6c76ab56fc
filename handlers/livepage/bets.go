package livepage

import (
	"strconv"

	"wager/domain/money"
	"wager/domain/settlement"
	"wager/views"
)

// betsView is a game's pools in words for the game page, with the
// viewer's own bets when me is not ""; held says the bets wait for a
// review.
func betsView(b settlement.Bets, held bool, names map[string]string, me string) *views.BetsView {
	v := &views.BetsView{Open: b.Open, Free: b.PoolCapMinor == 0}
	switch {
	case v.Free:
		v.Note = "No bets on free games: nobody loses anything by throwing one, so nobody may win on it either."
	case held:
		v.Note = "Held for review: an admin will pay these bets as the game ended, or refund them in full."
	case b.Open:
		v.Note = "Each player's pool takes at most " + money.FormatUSDC(b.PoolCapMinor) + " USDC."
	}
	fee := b.TotalMinor * int64(b.FeeBps) / 10_000
	for _, p := range b.Pools {
		pv := views.PoolView{UserID: p.UserID, Username: names[p.UserID], Total: money.FormatUSDC(p.TotalMinor),
			Odds: oddsWords(b.TotalMinor-fee, p.TotalMinor)}
		if b.TotalMinor > 0 {
			pv.Percent = int((p.TotalMinor*20+b.TotalMinor/2)/b.TotalMinor) * 5
		}
		v.Pools = append(v.Pools, pv)
	}
	if me == "" {
		return v
	}
	for _, bet := range b.Bets {
		if bet.UserID == me {
			v.Mine = append(v.Mine, myBetWords(bet, names))
		}
	}
	return v
}

// oddsWords is what a bet on a pool of poolMinor pays per USDC when the
// bets after the fee come to netMinor, rounded down to hundredths.
func oddsWords(netMinor, poolMinor int64) string {
	if poolMinor == 0 {
		return "no bets yet"
	}
	hundredths := netMinor * 100 / poolMinor
	return "pays " + strconv.FormatFloat(float64(hundredths)/100, 'f', -1, 64) + "x"
}

// myBetWords is one of the viewer's bets: "1 USDC on alice · won 1.98 USDC".
func myBetWords(b settlement.Bet, names map[string]string) string {
	s := money.FormatUSDC(b.AmountMinor) + " USDC on " + names[b.OnUserID] + " · "
	switch b.Status {
	case "won":
		return s + "won " + money.FormatUSDC(b.PayoutMinor) + " USDC"
	case "refunded":
		return s + "refunded"
	case "lost":
		return s + "lost"
	case settlement.BetHeld:
		return s + "held for review"
	}
	return s + "open"
}
