package handlers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	"wager/domain/money"
)

// marketTrader is a user trading in one market, with what it started with.
type marketTrader struct {
	player
	start int64
}

// orderOf is one of a trader's orders as GET .../market/orders lists it.
type orderOf struct {
	ID, Side, OutcomeID, Status string
	PriceMinor, Shares          int64
	FilledShares                int64
}

func (a *testApp) ordersOf(t testing.TB, p player, game string) []orderOf {
	t.Helper()
	r := a.do(t, request{path: "/games/" + game + "/market/orders?limit=200", header: p.auth})
	if r.Code != 200 {
		t.Fatalf("orders: %d %s", r.Code, r.Body)
	}
	var os []orderOf
	if err := jsonDecode(r.Body.Bytes(), &os); err != nil {
		t.Fatal(err)
	}
	return os
}

// checkMarketBooks checks a market's invariants in the database: its
// ledger account holds 1 USDC per outstanding pair plus what open buys
// lock; both outcomes have as many shares as there are pairs; no position
// is negative or locks more than it holds or other than its open sells;
// the ledger sums to zero.
func (a *testApp) checkMarketBooks(t testing.TB, game string, outcomes [2]string, step string) {
	t.Helper()
	ctx := context.Background()
	var shares0, shares1, openBuys, bad int64
	if err := a.DB.QueryRowContext(ctx, `SELECT
			coalesce(sum(shares) FILTER (WHERE outcome_id = ?), 0), coalesce(sum(shares) FILTER (WHERE outcome_id = ?), 0)
		FROM market_positions WHERE game_id = ?`, outcomes[0], outcomes[1], game).Scan(&shares0, &shares1); err != nil {
		t.Fatal(err)
	}
	if err := a.DB.QueryRowContext(ctx, `SELECT coalesce(sum(price_minor * (shares - filled_shares)), 0)
		FROM market_orders WHERE game_id = ? AND status = 'open' AND side = 'buy'`, game).Scan(&openBuys); err != nil {
		t.Fatal(err)
	}
	if shares0 != shares1 {
		t.Fatalf("%s: %d shares of outcome 0, %d of outcome 1: not pairs", step, shares0, shares1)
	}
	if got, want := a.ledger(t, money.Market(game)), 1_000_000*shares0+openBuys; got != want {
		t.Fatalf("%s: market account %d, want %d pairs + %d locked by open buys = %d", step, got, shares0, openBuys, want)
	}
	if err := a.DB.QueryRowContext(ctx, `SELECT count(*) FROM market_positions AS p
		LEFT JOIN (SELECT user_id, outcome_id, sum(shares - filled_shares) AS n FROM market_orders
			WHERE game_id = ? AND status = 'open' AND side = 'sell' GROUP BY user_id, outcome_id) AS s USING (user_id, outcome_id)
		WHERE p.game_id = ? AND (p.shares < 0 OR p.locked_shares < 0 OR p.locked_shares > p.shares
			OR p.locked_shares <> coalesce(s.n, 0))`, game, game).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		var rows []struct {
			UserID, OutcomeID               string
			Shares, LockedShares, CostMinor int64
		}
		_ = a.DB.NewSelect().Table("market_positions").Column("user_id", "outcome_id", "shares", "locked_shares", "cost_minor").
			Where("game_id = ?", game).Scan(ctx, &rows)
		t.Fatalf("%s: %d positions negative, over-locked or locking other than their open sells: %+v", step, bad, rows)
	}
	if err := a.DB.QueryRowContext(ctx, `SELECT count(*) FROM market_orders WHERE game_id = ? AND
		(filled_shares < 0 OR filled_shares > shares OR (status = 'open') = (filled_shares = shares) AND status <> 'cancelled')`,
		game).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		t.Fatalf("%s: %d orders open though filled, or filled though not", step, bad)
	}
	if balances, entries, err := money.Totals(ctx, a.DB); err != nil || balances != 0 || entries != 0 {
		t.Fatalf("%s: the ledger sums to %d (balances) and %d (entries): %v", step, balances, entries, err)
	}
}

// settleMarket redeems every trader after the market resolved and checks
// that the market's account is empty and that the traders hold together
// what they started with.
func (a *testApp) settleMarket(t testing.TB, game string, traders []marketTrader) {
	t.Helper()
	var start, end, redeemed int64
	for _, tr := range traders {
		r := a.redeem(t, tr.player, game)
		if r.Code != 200 {
			t.Fatalf("redeem: %d %s", r.Code, r.Body)
		}
		redeemed += int64(r.json(t)["redeemedMinor"].(float64))
		if again := a.redeem(t, tr.player, game); again.Code != 200 || again.json(t)["redeemedMinor"] != float64(0) {
			t.Errorf("a second redemption: %d %s", again.Code, again.Body)
		}
		b := a.balances(t, tr.auth)
		start, end = start+tr.start, end+b.available
		for o, p := range a.positionsOf(t, tr.player, game) {
			if p.Shares != 0 || p.LockedShares != 0 {
				t.Errorf("a position of %s left after redeeming: %+v", o, p)
			}
		}
	}
	if got := a.ledger(t, money.Market(game)); got != 0 {
		t.Errorf("market account after every trader redeemed %d: %d, want 0", redeemed, got)
	}
	if end != start {
		t.Errorf("the traders hold %d after redeeming, they started with %d", end, start)
	}
	t.Logf("%d redeemed; the traders hold %d, as they started", redeemed, end)
}

// randomMarketOrder draws a price near the middle (about half of the
// orders cross) or anywhere on the grid, a size and a time in force.
func randomMarketOrder(r *rand.Rand) (price, shares int64, tif string) {
	price = 400_000 + r.Int64N(21)*10_000
	if r.IntN(5) == 0 {
		price = 10_000 + r.Int64N(99)*10_000
	}
	shares = 1 + r.Int64N(10)
	if r.IntN(4) == 0 {
		tif = "IOC"
	}
	return price, shares, tif
}

// Random buys, sells and cancels of five traders through the API: after
// every step the market's account holds 1 USDC per outstanding pair plus
// what open buys lock, both outcomes have as many shares as pairs, no
// position is negative and the ledger sums to zero. One seed ends the game
// with a winner, the other lets it be abandoned (a draw at 0.50 a share);
// after every trader redeemed, the market's account is empty and the
// traders together hold what they deposited.
func TestMarketRandomOrdersKeepTheCollateral(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		end  string
	}{{1, "win"}, {2, "draw"}} {
		t.Run(fmt.Sprintf("seed %d %s", c.seed, c.end), func(t *testing.T) {
			a := newTestApp(t, roomyMarkets)
			settings := `{"rounds": 1, "roundSeconds": 120}` // the moves that end it come after 400 orders, on a busy machine too
			if c.end == "draw" {
				settings = `{"rounds": 1, "roundSeconds": 3}` // nobody moves: abandoned when the round expires
			}
			p1, p2, game := a.marketGame(t, settings)
			outcomes := [2]string{p1.id, p2.id}
			traders := make([]marketTrader, 5)
			for i := range traders {
				traders[i] = marketTrader{a.depositor(t, 50_000_000), 50_000_000}
			}
			r := rand.New(rand.NewPCG(c.seed, 0x6d61726b6574))
			stats := map[string]int{}
			const steps = 400
			for step := 1; step <= steps; step++ {
				tr := traders[r.IntN(len(traders))]
				outcome := outcomes[r.IntN(2)]
				price, shares, tif := randomMarketOrder(r)
				what := ""
				switch k := r.IntN(10); {
				case k < 2: // cancel one of its open orders
					var open []orderOf
					for _, o := range a.ordersOf(t, tr.player, game) {
						if o.Status == "open" {
							open = append(open, o)
						}
					}
					if len(open) == 0 {
						continue
					}
					o := open[r.IntN(len(open))]
					what = fmt.Sprintf("step %d: cancel %+v", step, o)
					res := a.do(t, request{method: http.MethodDelete, path: "/games/" + game + "/market/orders/" + o.ID, header: tr.auth})
					if res.Code != 200 || res.json(t)["status"] != "cancelled" {
						t.Fatalf("%s: %d %s", what, res.Code, res.Body)
					}
					stats["cancel"]++
				case k < 6: // sell shares it holds (now and then more than it holds)
					held := a.positionsOf(t, tr.player, game)[outcome]
					free := held.Shares - held.LockedShares
					if free > 0 && r.IntN(10) > 0 {
						shares = 1 + r.Int64N(free)
					}
					what = fmt.Sprintf("step %d: sell %d of %s at %d %s holding %+v", step, shares, outcome, price, tif, held)
					res := a.order(t, tr.player, game, "sell", outcome, price, shares, tif)
					if shares > free {
						res.wantError(t, 409, "INSUFFICIENT_SHARES")
						stats["sell refused"]++
						break
					}
					checkPlaced(t, res, what, shares, tif, stats)
				default:
					if r.IntN(10) == 0 {
						shares = 50 + r.Int64N(100) // often more than it can pay
					}
					// The whole limit is locked first: a buy is refused when
					// the balance does not cover it, even if it would trade
					// cheaper.
					available := a.balances(t, tr.auth).available
					what = fmt.Sprintf("step %d: buy %d of %s at %d %s with %d available", step, shares, outcome, price, tif, available)
					res := a.order(t, tr.player, game, "buy", outcome, price, shares, tif)
					if available < price*shares {
						res.wantError(t, 409, "INSUFFICIENT_FUNDS")
						stats["buy refused"]++
						break
					}
					checkPlaced(t, res, what, shares, tif, stats)
				}
				a.checkMarketBooks(t, game, outcomes, what)
			}
			a.tradeKinds(t, game, stats)
			t.Logf("%d steps: %v", steps, stats)
			if stats["mint"] == 0 || stats["merge"] == 0 || stats["transfer"] == 0 || stats["cancel"] == 0 || stats["IOC left"] == 0 {
				t.Errorf("the sequence missed a case: %v", stats)
			}

			if c.end == "win" {
				a.act(t, p1, game, `{"type": "move", "move": "paper"}`)
				a.act(t, p2, game, `{"type": "move", "move": "scissors"}`) // p2 wins
			} else {
				waitFor(t, func() bool {
					if _, err := a.Games.ExpireDue(context.Background()); err != nil {
						t.Fatal(err)
					}
					return a.do(t, request{path: "/games/" + game}).json(t)["status"] == "cancelled"
				})
			}
			v := a.marketOf(t, game)
			want := map[string]int64{p1.id: 0, p2.id: 1_000_000}
			if c.end == "draw" {
				want = map[string]int64{p1.id: 500_000, p2.id: 500_000}
			}
			if v.Status != "resolved" || v.Resolution[p1.id] != want[p1.id] || v.Resolution[p2.id] != want[p2.id] {
				t.Fatalf("market after the game: %+v, want resolution %v", v, want)
			}
			a.checkMarketBooks(t, game, outcomes, "resolved")
			a.settleMarket(t, game, traders)
		})
	}
}

// tradeKinds counts a market's trades by kind into stats.
func (a *testApp) tradeKinds(t testing.TB, game string, stats map[string]int) {
	t.Helper()
	var kinds []struct {
		Kind string
		N    int
	}
	if err := a.DB.NewSelect().Table("market_trades").ColumnExpr("kind, count(*) AS n").Where("game_id = ?", game).
		Group("kind").Scan(context.Background(), &kinds); err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		stats[k.Kind] = k.N
	}
}

// checkPlaced checks a 201 answer to an order: its fills add up to its
// filled shares, and its status is what its fills and time in force make it.
func checkPlaced(t testing.TB, res response, what string, shares int64, tif string, stats map[string]int) placedOrder {
	t.Helper()
	if res.Code != http.StatusCreated {
		t.Fatalf("%s: %d %s", what, res.Code, res.Body)
	}
	var p placedOrder
	if err := jsonDecode(res.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	var filled int64
	for _, tr := range p.Trades {
		filled += tr.Shares
	}
	want := "open"
	switch {
	case filled == shares:
		want = "filled"
	case tif == "IOC":
		want = "cancelled"
		stats["IOC left"]++
	}
	if p.Order.FilledShares != filled || p.Order.Shares != shares || p.Order.Status != want {
		t.Fatalf("%s: %+v, want %d filled and %s", what, p, filled, want)
	}
	return p
}
