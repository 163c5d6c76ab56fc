package livepage

import (
	"strconv"

	"wager/domain/market"
	"wager/domain/money"
	"wager/views"
)

// bookDepth is how many prices of each side the page's ladders show.
const bookDepth = 6

// MarketView is a market in words for the game page.
func MarketView(m market.View) *views.MarketView {
	v := &views.MarketView{Status: m.Status, Summary: marketSummary(m), Free: m.MaxPairs == 0 && m.Status != market.StatusOpen}
	for i, o := range m.Outcomes {
		ov := views.MarketOutcome{OutcomeID: o.OutcomeID, Username: o.Username, Bid: priceWords(o.BestBidMinor),
			Ask: priceWords(o.BestAskMinor), Last: priceWords(o.LastPriceMinor), Volume: strconv.FormatInt(o.VolumeShares, 10)}
		if i < len(m.Book) {
			asks := m.Book[i].Asks[:min(bookDepth, len(m.Book[i].Asks))]
			for j := len(asks) - 1; j >= 0; j-- { // the best ask just above the best bid
				ov.Asks = append(ov.Asks, levelWords(asks[j]))
			}
			for _, l := range m.Book[i].Bids[:min(bookDepth, len(m.Book[i].Bids))] {
				ov.Bids = append(ov.Bids, levelWords(l))
			}
		}
		v.Outcomes = append(v.Outcomes, ov)
	}
	if t := m.LastTrade; t != nil && len(m.Outcomes) > 0 {
		v.LastTradeID, v.LastTradeAt, v.LastPrice0 = t.ID, t.CreatedAt.Unix(), t.PriceMinor
		if t.OutcomeID != m.Outcomes[0].OutcomeID {
			v.LastPrice0 = 1_000_000 - t.PriceMinor
		}
	}
	return v
}

func levelWords(l market.Level) views.MarketLevel {
	return views.MarketLevel{Price: money.FormatUSDC(l.PriceMinor), Shares: strconv.FormatInt(l.Shares, 10)}
}

// priceWords is a price per share in USDC, "–" for none.
func priceWords(p *int64) string {
	if p == nil {
		return "–"
	}
	return money.FormatUSDC(*p)
}

// marketSummary says where the market stands.
func marketSummary(m market.View) string {
	switch m.Status {
	case market.StatusOpen:
		return "Trading is open until the game ends; at most " + strconv.FormatInt(m.MaxPairs, 10) + " pairs of shares can be outstanding (" +
			strconv.FormatInt(m.Pairs, 10) + " now)."
	case market.StatusResolved:
		for _, o := range m.Outcomes {
			if m.Resolution[o.OutcomeID] == 1_000_000 {
				return "Resolved: each share of " + o.Username + " pays 1 USDC, the others nothing."
			}
		}
		return "Resolved without a winner: every share pays 0.5 USDC."
	case market.StatusHeld:
		return "Held for review: an admin will resolve the market as the game ended, or void it (every share pays 0.5 USDC). " +
			"Until then shares cannot be redeemed."
	}
	if m.MaxPairs == 0 {
		return "Free games have no market: nobody loses anything by throwing one, so nobody may win on it either."
	}
	return "Trading closed when the game ended: nobody traded in this market."
}
