package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Twenty traders place random buys, sells and cancels into one market at
// once. Orders of one market are serialised by the game's and the market's
// row locks, so afterwards the books must be as after any sequence: the
// collateral, pairs and positions invariants hold, every order's filled
// shares are the sum of its trades as maker or taker, no order is open and
// fully filled, and the open orders do not cross. Then the game ends and
// every trader redeems: the market's account is empty and the traders hold
// what they deposited.
func TestMarketConcurrentTradersKeepTheBooks(t *testing.T) {
	a := newTestApp(t, roomyMarkets)
	p1, p2, game := a.marketGame(t, `{"rounds": 1}`)
	outcomes := [2]string{p1.id, p2.id}
	traders := make([]marketTrader, 20)
	for i := range traders {
		traders[i] = marketTrader{a.depositor(t, 20_000_000), 20_000_000}
	}
	const perTrader = 30
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		stats = map[string]int{}
	)
	count := func(k string) { mu.Lock(); stats[k]++; mu.Unlock() }
	for i, tr := range traders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.tradeAtRandom(t, i, tr, game, outcomes, perTrader, count)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	a.checkMarketBooks(t, game, outcomes, "after the concurrent orders")

	a.checkOrdersAgainstTrades(t, game)
	a.checkNoOpenOrdersCross(t, game)
	a.tradeKinds(t, game, stats)
	t.Logf("%d traders x %d orders: %v", len(traders), perTrader, stats)
	if stats["mint"] == 0 || stats["merge"] == 0 || stats["transfer"] == 0 || stats["cancel"] == 0 {
		t.Errorf("the orders missed a case: %v", stats)
	}

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`) // p1 wins
	if v := a.marketOf(t, game); v.Status != "resolved" || v.Resolution[p1.id] != 1_000_000 {
		t.Fatalf("market after the game: %+v", v)
	}
	a.checkMarketBooks(t, game, outcomes, "resolved")
	a.settleMarket(t, game, traders)
}

// tradeAtRandom has trader i place perTrader random buys, sells and
// cancels into the market of game, counting each kind by count.
func (a *testApp) tradeAtRandom(t *testing.T, i int, tr marketTrader, game string, outcomes [2]string, perTrader int,
	count func(string)) {
	r := rand.New(rand.NewPCG(uint64(i), 0x636f6e63))
	var open []string // ids of its orders that rested
	for n := range perTrader {
		outcome := outcomes[r.IntN(2)]
		price, shares, tif := randomMarketOrder(r)
		var res response
		what := ""
		switch k := r.IntN(10); {
		case k < 2 && len(open) > 0:
			j := r.IntN(len(open))
			id := open[j]
			open = append(open[:j], open[j+1:]...)
			what = "cancel " + id
			res = a.do(t, request{method: http.MethodDelete, path: "/games/" + game + "/market/orders/" + id, header: tr.auth})
			switch {
			case res.Code == 200:
				count("cancel")
			case res.Code == http.StatusConflict: // filled meanwhile
				count("cancel too late")
			default:
				t.Errorf("trader %d order %d: %s: %d %s", i, n, what, res.Code, res.Body)
			}
			continue
		case k < 6:
			// Only its own sells lock or take its shares, so what it
			// holds free now it can sell.
			pr := a.do(t, request{path: "/games/" + game + "/market/positions", header: tr.auth})
			var ps []position
			if err := json.Unmarshal(pr.Body.Bytes(), &ps); err != nil || pr.Code != 200 {
				t.Errorf("trader %d: positions: %d %s", i, pr.Code, pr.Body)
				return
			}
			var free int64
			for _, p := range ps {
				if p.OutcomeID == outcome {
					free = p.Shares - p.LockedShares
				}
			}
			if free == 0 {
				continue
			}
			shares = 1 + r.Int64N(free)
			what = fmt.Sprintf("sell %d of %s at %d %s", shares, outcome, price, tif)
			res = a.order(t, tr.player, game, "sell", outcome, price, shares, tif)
		default:
			what = fmt.Sprintf("buy %d of %s at %d %s", shares, outcome, price, tif)
			res = a.order(t, tr.player, game, "buy", outcome, price, shares, tif)
			if res.Code == http.StatusConflict && strings.Contains(res.Body.String(), `"INSUFFICIENT_FUNDS"`) {
				count("buy refused")
				continue
			}
		}
		if res.Code != http.StatusCreated {
			t.Errorf("trader %d order %d: %s: %d %s", i, n, what, res.Code, res.Body)
			continue
		}
		var p placedOrder
		if err := json.Unmarshal(res.Body.Bytes(), &p); err != nil {
			t.Errorf("trader %d: %s: %v", i, what, err)
			continue
		}
		if p.Order.Status == "open" {
			open = append(open, p.Order.ID)
		}
		count("placed")
	}
}

// checkOrdersAgainstTrades checks that every order's filled shares are the
// sum of its trades as maker or taker, and that no order is open and
// fully filled.
func (a *testApp) checkOrdersAgainstTrades(t *testing.T, game string) {
	t.Helper()
	ctx := context.Background()
	var bad []struct {
		ID, Status           string
		Shares, FilledShares int64
		Traded               int64
	}
	if err := a.DB.NewRaw(`SELECT o.id, o.status, o.shares, o.filled_shares, coalesce(t.n, 0) AS traded
		FROM market_orders AS o LEFT JOIN (
			SELECT id, sum(shares) AS n FROM (
				SELECT maker_order_id AS id, shares FROM market_trades WHERE game_id = ?
				UNION ALL SELECT taker_order_id, shares FROM market_trades WHERE game_id = ?) AS x GROUP BY id
		) AS t ON t.id = o.id
		WHERE o.game_id = ? AND (o.filled_shares <> coalesce(t.n, 0) OR (o.status = 'open' AND o.filled_shares = o.shares))`,
		game, game, game).Scan(ctx, &bad); err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("orders whose filled shares are not their trades', or open though filled: %+v", bad)
	}
}

// checkNoOpenOrdersCross checks that orders that would cross each other
// have matched: no resting buy meets a resting sell of its outcome at its price or below, no two
// buys of the two outcomes add up to 1 USDC, no two sells to 1 USDC or
// less.
func (a *testApp) checkNoOpenOrdersCross(t *testing.T, game string) {
	t.Helper()
	ctx := context.Background()
	var crossed int
	if err := a.DB.QueryRowContext(ctx, `SELECT count(*) FROM market_orders AS x JOIN market_orders AS y
		ON x.game_id = y.game_id AND x.seq < y.seq
		WHERE x.game_id = ? AND x.status = 'open' AND y.status = 'open' AND (
			(x.outcome_id = y.outcome_id AND x.side <> y.side AND
				CASE WHEN x.side = 'buy' THEN x.price_minor >= y.price_minor ELSE y.price_minor >= x.price_minor END)
			OR (x.outcome_id <> y.outcome_id AND x.side = 'buy' AND y.side = 'buy' AND x.price_minor + y.price_minor >= 1000000)
			OR (x.outcome_id <> y.outcome_id AND x.side = 'sell' AND y.side = 'sell' AND x.price_minor + y.price_minor <= 1000000))`,
		game).Scan(&crossed); err != nil {
		t.Fatal(err)
	}
	if crossed > 0 {
		t.Fatalf("%d pairs of open orders cross", crossed)
	}
}
