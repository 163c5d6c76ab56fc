package market

import (
	"strconv"
	"time"

	"wager/domain/market/engine"
	"wager/domain/money"
)

// holding is what one user holds of one outcome: shares (locked ones
// included) and the net cost of them.
type holding struct {
	Shares, Locked, Cost int64
}

// slot names a holding: a user and an outcome index.
type slot struct {
	User    string
	Outcome int
}

// book of the money and shares that one order moves: the ledger postings
// in order, and the holdings they change. The order's effects are pure
// arithmetic, shared by the service and the property tests.
type effects struct {
	gameID   string
	orderID  string
	postings []money.Posting
	holdings map[slot]*holding
}

func newEffects(gameID, orderID string, holdings map[slot]*holding) *effects {
	return &effects{gameID: gameID, orderID: orderID, holdings: holdings}
}

func (e *effects) holding(user string, outcome int) *holding {
	h := e.holdings[slot{user, outcome}]
	if h == nil {
		h = &holding{}
		e.holdings[slot{user, outcome}] = h
	}
	return h
}

// post adds a posting of the non-zero entries, when there are any.
func (e *effects) post(kind, reference string, entries ...money.Entry) {
	var kept []money.Entry
	for _, en := range entries {
		if en.Amount != 0 {
			kept = append(kept, en)
		}
	}
	if len(kept) > 0 {
		e.postings = append(e.postings, money.Posting{Kind: kind, Reference: reference, Memo: "market of game " + e.gameID, Entries: kept})
	}
}

// stamped returns the postings dated at (see money.Posting.At).
func (e *effects) stamped(at time.Time) []money.Posting {
	for i := range e.postings {
		e.postings[i].At = at
	}
	return e.postings
}

// lock takes what an order needs before it matches: a buy's price times
// shares from the available balance into the market's account, a sell's
// shares out of the unlocked part of the position. It reports false when
// the position does not hold the shares (the ledger refuses a buy the
// balance does not cover).
func (e *effects) lock(o engine.Order) bool {
	if o.Side == engine.Buy {
		e.post("market_order", "market-order:"+e.orderID,
			money.Entry{Account: money.Available(o.Owner), Amount: -o.Price * o.Shares},
			money.Entry{Account: money.Market(e.gameID), Amount: o.Price * o.Shares})
		return true
	}
	h := e.holdings[slot{o.Owner, o.Outcome}] // a refused sell adds no holding to write
	if h == nil || h.Shares-h.Locked < o.Shares {
		return false
	}
	h.Locked += o.Shares
	return true
}

// release gives back what an order still locks for its unfilled shares:
// at a cancel, or for what an IOC order leaves.
func (e *effects) release(o engine.Order, shares int64, reference string) {
	if shares == 0 {
		return
	}
	if o.Side == engine.Buy {
		e.post("market_release", reference,
			money.Entry{Account: money.Market(e.gameID), Amount: -o.Price * shares},
			money.Entry{Account: money.Available(o.Owner), Amount: o.Price * shares})
		return
	}
	e.holding(o.Owner, o.Outcome).Locked -= shares
}

// fill moves money and shares for one trade of taker against f.Maker, as
// one ledger transaction. Locked money is in the market's account: a buyer
// pays out of its lock (a taker buyer gets back its limit less the price),
// a seller is paid out of the account; a mint keeps both buyers' money as
// the new pair's collateral, a merge pays the pair's collateral to both
// sellers. (A mint at exactly the taker's limit moves no money at all:
// both buyers' money is already the collateral, so it has no posting.)
func (e *effects) fill(taker engine.Order, f engine.Fill, n int) {
	m, s := f.Maker, f.Shares
	market := money.Market(e.gameID)
	ref := "market-trade:" + e.orderID + ":" + strconv.Itoa(n)
	switch {
	case f.Kind == engine.Transfer && taker.Side == engine.Buy: // the maker sells
		e.post("market_trade", ref, money.Entry{Account: market, Amount: -taker.Price * s},
			money.Entry{Account: money.Available(m.Owner), Amount: f.MakerPrice * s},
			money.Entry{Account: money.Available(taker.Owner), Amount: (taker.Price - f.MakerPrice) * s})
		e.gain(taker.Owner, taker.Outcome, s, f.MakerPrice*s)
		e.lose(m.Owner, m.Outcome, s, f.MakerPrice*s)
	case f.Kind == engine.Transfer: // the taker sells to the maker's buy
		e.post("market_trade", ref, money.Entry{Account: market, Amount: -f.MakerPrice * s},
			money.Entry{Account: money.Available(taker.Owner), Amount: f.MakerPrice * s})
		e.gain(m.Owner, m.Outcome, s, f.MakerPrice*s)
		e.lose(taker.Owner, taker.Outcome, s, f.MakerPrice*s)
	case f.Kind == engine.Mint:
		e.post("market_trade", ref, money.Entry{Account: market, Amount: -(taker.Price - f.TakerPrice) * s},
			money.Entry{Account: money.Available(taker.Owner), Amount: (taker.Price - f.TakerPrice) * s})
		e.gain(taker.Owner, taker.Outcome, s, f.TakerPrice*s)
		e.gain(m.Owner, m.Outcome, s, f.MakerPrice*s)
	case f.Kind == engine.Merge:
		e.post("market_trade", ref, money.Entry{Account: market, Amount: -engine.One * s},
			money.Entry{Account: money.Available(taker.Owner), Amount: f.TakerPrice * s},
			money.Entry{Account: money.Available(m.Owner), Amount: f.MakerPrice * s})
		e.lose(taker.Owner, taker.Outcome, s, f.TakerPrice*s)
		e.lose(m.Owner, m.Outcome, s, f.MakerPrice*s)
	}
}

func (e *effects) gain(user string, outcome int, shares, paid int64) {
	h := e.holding(user, outcome)
	h.Shares += shares
	h.Cost += paid
}

// lose takes sold shares out of the seller's locked ones.
func (e *effects) lose(user string, outcome int, shares, got int64) {
	h := e.holding(user, outcome)
	h.Shares -= shares
	h.Locked -= shares
	h.Cost -= got
}

// valid reports whether every holding is whole: no negative shares, no
// more locked than held.
func (e *effects) valid() bool {
	for _, h := range e.holdings {
		if h.Shares < 0 || h.Locked < 0 || h.Locked > h.Shares {
			return false
		}
	}
	return true
}
