package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"wager/domain/money"
)

type placedOrder struct {
	Order struct {
		ID, Side, OutcomeID, Status, TimeInForce string
		PriceMinor, Shares, FilledShares         int64
	}
	Trades []struct{ PriceMinor, Shares int64 }
}

type marketView struct {
	GameID, Status string
	Outcomes       []struct {
		OutcomeID, Username                        string
		BestBidMinor, BestAskMinor, LastPriceMinor *int64
		VolumeShares                               int64
	}
	Book []struct {
		OutcomeID string
		Bids      []struct{ PriceMinor, Shares int64 }
		Asks      []struct{ PriceMinor, Shares int64 }
	}
	Resolution map[string]int64
}

type position struct {
	OutcomeID                       string
	Shares, LockedShares, CostMinor int64
}

// roomyMarkets lets a game's market hold far more pairs than its stakes
// would (POOL_CAP_MULTIPLE at its maximum): the tests of matching and
// collateral trade more than a 1 USDC game's market may.
var roomyMarkets = map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "POOL_CAP_MULTIPLE": "1000"}

// marketGame matches two depositors in an rps game staked at 1 USDC: the
// smallest game with a market that roomyMarkets lets hold 2000 pairs.
func (a *testApp) marketGame(t testing.TB, settings string) (player, player, string) {
	t.Helper()
	return a.stakedGame(t, 1_000_000, settings)
}

func orderBody(outcome string, price, shares int64, tif string) string {
	m := map[string]any{"outcomeId": outcome, "priceMinor": price, "shares": shares}
	if tif != "" {
		m["timeInForce"] = tif
	}
	return jsonBody(m)
}

// order places an order; side is "buy" or "sell".
func (a *testApp) order(t testing.TB, p player, game, side, outcome string, price, shares int64, tif string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/market/orders/" + side, header: p.auth,
		body: orderBody(outcome, price, shares, tif)})
}

// placed places an order and wants it taken.
func (a *testApp) placed(t testing.TB, p player, game, side, outcome string, price, shares int64, tif string) placedOrder {
	t.Helper()
	r := a.order(t, p, game, side, outcome, price, shares, tif)
	if r.Code != http.StatusCreated {
		t.Fatalf("%s %d of %s at %d: %d %s", side, shares, outcome, price, r.Code, r.Body)
	}
	var out placedOrder
	if err := jsonDecode(r.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (a *testApp) marketOf(t testing.TB, game string) marketView {
	t.Helper()
	r := a.do(t, request{path: "/games/" + game + "/market"})
	if r.Code != 200 {
		t.Fatalf("market: %d %s", r.Code, r.Body)
	}
	var v marketView
	if err := jsonDecode(r.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// positionsOf returns p's positions by outcome.
func (a *testApp) positionsOf(t testing.TB, p player, game string) map[string]position {
	t.Helper()
	r := a.do(t, request{path: "/games/" + game + "/market/positions", header: p.auth})
	if r.Code != 200 {
		t.Fatalf("positions: %d %s", r.Code, r.Body)
	}
	var ps []position
	if err := jsonDecode(r.Body.Bytes(), &ps); err != nil {
		t.Fatal(err)
	}
	out := map[string]position{}
	for _, p := range ps {
		out[p.OutcomeID] = p
	}
	return out
}

func (a *testApp) wantAvailable(t testing.TB, p player, want int64, what string) {
	t.Helper()
	if b := a.balances(t, p.auth); b.available != want {
		t.Errorf("%s: available %d, want %d", what, b.available, want)
	}
}

func (a *testApp) wantPosition(t testing.TB, p player, game, outcome string, shares, locked int64, what string) {
	t.Helper()
	got := a.positionsOf(t, p, game)[outcome]
	if got.Shares != shares || got.LockedShares != locked {
		t.Errorf("%s: position %+v, want %d shares, %d locked", what, got, shares, locked)
	}
}

func (a *testApp) redeem(t testing.TB, p player, game string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/market/redeem", header: p.auth})
}

func TestMarketOrderRules(t *testing.T) {
	a := newTestApp(t, roomyMarkets)
	p1, p2, game := a.marketGame(t, `{"rounds": 1}`)
	trader, other := a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)

	for _, c := range []struct {
		name, body, field string
	}{
		{"a price off the grid", orderBody(p1.id, 505_000, 1, ""), "priceMinor"},
		{"a price of 0", orderBody(p1.id, 0, 1, ""), "priceMinor"},
		{"a price of 1 USDC", orderBody(p1.id, 1_000_000, 1, ""), "priceMinor"},
		{"no shares", orderBody(p1.id, 500_000, 0, ""), "shares"},
		{"too many shares", orderBody(p1.id, 500_000, 100_001, ""), "shares"},
		{"an outcome that is no player", orderBody(trader.id, 500_000, 1, ""), "outcomeId"},
		{"an unknown time in force", orderBody(p1.id, 500_000, 1, "FOK"), "timeInForce"},
	} {
		r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/market/orders/buy", header: trader.auth, body: c.body})
		e := r.wantError(t, 400, "VALIDATION_ERROR")
		if fields, _ := e["fields"].(map[string]any); fields[c.field] == nil {
			t.Errorf("%s: %s names no %s", c.name, r.Body, c.field)
		}
	}
	a.order(t, p1, game, "buy", p2.id, 500_000, 1, "").wantError(t, 403, "FORBIDDEN")
	a.order(t, trader, "00000000-0000-0000-0000-000000000000", "buy", p1.id, 500_000, 1, "").wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/market/orders/buy",
		body: orderBody(p1.id, 500_000, 1, "")}).wantError(t, 401, "UNAUTHORIZED")
	// 3 shares at 0.40 is 1.20 USDC: more than the 1 USDC deposited.
	if e := a.order(t, trader, game, "buy", p1.id, 400_000, 3, "").wantError(t, 409, "INSUFFICIENT_FUNDS"); e["message"] == "" {
		t.Error("no message")
	}
	a.order(t, trader, game, "sell", p1.id, 500_000, 1, "").wantError(t, 409, "INSUFFICIENT_SHARES")
	a.redeem(t, trader, game).wantError(t, 409, "CONFLICT")
	a.wantAvailable(t, trader, 1_000_000, "after refused orders")

	resting := a.placed(t, trader, game, "buy", p1.id, 300_000, 2, "")
	if o := resting.Order; o.Status != "open" || o.FilledShares != 0 || o.TimeInForce != "GTC" || len(resting.Trades) != 0 {
		t.Fatalf("a resting order: %+v", resting)
	}
	a.wantAvailable(t, trader, 400_000, "with 0.60 USDC locked")
	path := "/games/" + game + "/market/orders/" + resting.Order.ID
	a.do(t, request{method: http.MethodDelete, path: path, header: other.auth}).wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodDelete, path: "/games/" + game + "/market/orders/not-an-id", header: trader.auth}).wantError(t, 404, "NOT_FOUND")
	r := a.do(t, request{method: http.MethodDelete, path: path, header: trader.auth})
	if r.Code != 200 || r.json(t)["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", r.Code, r.Body)
	}
	a.wantAvailable(t, trader, 1_000_000, "after the cancel")
	a.do(t, request{method: http.MethodDelete, path: path, header: trader.auth}).wantError(t, 409, "CONFLICT")

	// My orders: the open one first, then the newest, a page at a time.
	open := a.placed(t, trader, game, "buy", p1.id, 100_000, 1, "")
	newest := a.placed(t, trader, game, "buy", p1.id, 100_000, 1, "IOC") // crosses nothing: cancelled
	var ids []string
	for before := ""; ; {
		r := a.do(t, request{path: "/games/" + game + "/market/orders?limit=1&before=" + before, header: trader.auth})
		var page []struct{ ID string }
		if err := jsonDecode(r.Body.Bytes(), &page); r.Code != 200 || err != nil {
			t.Fatalf("my orders: %d %s", r.Code, r.Body)
		}
		if len(page) == 0 {
			break
		}
		ids = append(ids, page[0].ID)
		before = page[0].ID
	}
	if want := []string{open.Order.ID, newest.Order.ID, resting.Order.ID}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("my orders page by page: %v, want %v", ids, want)
	}
	a.do(t, request{path: "/games/" + game + "/market/orders?before=" + game, header: trader.auth}).wantError(t, 400, "VALIDATION_ERROR")

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	a.order(t, trader, game, "buy", p1.id, 500_000, 1, "").wantError(t, 409, "GAME_NOT_ACTIVE")
	if v := a.marketOf(t, game); v.Status != "resolved" || v.Resolution[p1.id] != 1_000_000 || v.Resolution[p2.id] != 0 {
		t.Errorf("the market of the finished game: %+v", v)
	}
}

// Every crossing of API.md through the API: a mint of two buys, a transfer,
// partial fills across price levels with an IOC leftover, a merge of two
// sells; then the game ends, open orders are released, holders are told,
// and the winner's holder redeems once.
func TestMarketMatchesMintsMergesAndResolves(t *testing.T) {
	a := newTestApp(t, roomyMarkets)
	ctx := context.Background()
	p1, p2, game := a.marketGame(t, `{"rounds": 1}`)
	t1, t2, t3 := a.depositor(t, 10_000_000), a.depositor(t, 10_000_000), a.depositor(t, 10_000_000)
	collateral := func() int64 { return a.ledger(t, money.Market(game)) }

	// A buy of p1 at 0.60 rests; a buy of p2 at 0.45 mints 10 pairs with it:
	// the incoming buyer pays 1 - 0.60 = 0.40, less than its 0.45.
	a.placed(t, t1, game, "buy", p1.id, 600_000, 10, "")
	mint := a.placed(t, t2, game, "buy", p2.id, 450_000, 10, "")
	if mint.Order.Status != "filled" || len(mint.Trades) != 1 || mint.Trades[0].PriceMinor != 400_000 || mint.Trades[0].Shares != 10 {
		t.Fatalf("the mint: %+v", mint)
	}
	a.wantAvailable(t, t1, 4_000_000, "the first buyer paid 6")
	a.wantAvailable(t, t2, 6_000_000, "the second buyer paid 4, not 4.50")
	a.wantPosition(t, t1, game, p1.id, 10, 0, "the first buyer")
	a.wantPosition(t, t2, game, p2.id, 10, 0, "the second buyer")
	if got := collateral(); got != 10_000_000 {
		t.Errorf("collateral after the mint: %d, want 10 pairs", got)
	}

	// t1 offers p1 at three prices; t3 buys 5 at up to 0.63, IOC: 2 at
	// 0.60, 2 at 0.62, and the fifth share is cancelled.
	for _, price := range []int64{600_000, 620_000, 650_000} {
		a.placed(t, t1, game, "sell", p1.id, price, 2, "")
	}
	a.wantPosition(t, t1, game, p1.id, 10, 6, "shares locked by three sells")
	ioc := a.placed(t, t3, game, "buy", p1.id, 630_000, 5, "IOC")
	if o := ioc.Order; o.Status != "cancelled" || o.FilledShares != 4 || len(ioc.Trades) != 2 ||
		ioc.Trades[0] != (struct{ PriceMinor, Shares int64 }{600_000, 2}) || ioc.Trades[1] != (struct{ PriceMinor, Shares int64 }{620_000, 2}) {
		t.Fatalf("partial fills across two levels, IOC: %+v", ioc)
	}
	a.wantAvailable(t, t3, 10_000_000-2_440_000, "the IOC buyer paid 2.44 and got the rest of its lock back")
	a.wantAvailable(t, t1, 4_000_000+2_440_000, "the seller was paid at its prices")
	a.wantPosition(t, t3, game, p1.id, 4, 0, "the IOC buyer")
	a.wantPosition(t, t1, game, p1.id, 6, 2, "the seller")
	v := a.marketOf(t, game)
	if v.Status != "open" || len(v.Outcomes) != 2 || v.Outcomes[0].OutcomeID != p1.id || v.Outcomes[0].Username == "" ||
		*v.Outcomes[0].LastPriceMinor != 620_000 || *v.Outcomes[1].LastPriceMinor != 380_000 ||
		v.Outcomes[0].VolumeShares != 14 || v.Outcomes[1].VolumeShares != 10 || *v.Outcomes[0].BestAskMinor != 650_000 {
		t.Errorf("market after the trades: %+v", v)
	}

	// t2 offers 3 of p2 at 0.40 (it crosses no sell of p1 at 0.60 or less);
	// t3 sells 3 of p1 at 0.60, which merges with it (0.60 + 0.40 <= 1): the
	// pairs are destroyed, t2 gets 0.40 a share and t3 0.60.
	a.placed(t, t2, game, "sell", p2.id, 400_000, 3, "")
	merge := a.placed(t, t3, game, "sell", p1.id, 600_000, 3, "")
	if merge.Order.Status != "filled" || len(merge.Trades) != 1 || merge.Trades[0].PriceMinor != 600_000 {
		t.Fatalf("the merge: %+v", merge)
	}
	a.wantAvailable(t, t2, 6_000_000+1_200_000, "the resting seller got 0.40 a share")
	a.wantAvailable(t, t3, 10_000_000-2_440_000+1_800_000, "the incoming seller got 0.60 a share")
	a.wantPosition(t, t3, game, p1.id, 1, 0, "after the merge")
	a.wantPosition(t, t2, game, p2.id, 7, 0, "after the merge")
	if got := collateral(); got != 7_000_000 {
		t.Errorf("collateral after merging 3 pairs: %d, want 7 pairs and no open buys", got)
	}

	// A buy that rests until the end is released then.
	a.placed(t, t3, game, "buy", p2.id, 100_000, 5, "")
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`) // p1 wins
	v = a.marketOf(t, game)
	if v.Status != "resolved" || v.Resolution[p1.id] != 1_000_000 || v.Resolution[p2.id] != 0 || len(v.Book[0].Asks) != 0 {
		t.Fatalf("resolved market: %+v", v)
	}
	a.wantAvailable(t, t3, 10_000_000-2_440_000+1_800_000, "the open buy was released at the end")
	a.wantPosition(t, t1, game, p1.id, 6, 0, "the seller's locked shares are free at the end")
	ns, _ := a.notifications(t, t1, "")
	if len(ns) == 0 || ns[0].Type != "market_resolved" || ns[0].Data["redeemableMinor"] != float64(6_000_000) {
		t.Errorf("the holder's notification: %+v", ns)
	}

	// Redeeming pays once, even when asked ten times at once.
	paid := a.redeemAtOnce(t, t1, game, 10)
	var sum float64
	for _, p := range paid {
		sum += p
	}
	if sum != 6_000_000 {
		t.Errorf("ten redemptions paid %v in all, want 6000000 once: %v", sum, paid)
	}
	a.wantAvailable(t, t1, 6_440_000+6_000_000, "the winner's holder after redeeming")
	if r := a.redeem(t, t2, game); r.Code != 200 || r.json(t)["redeemedMinor"] != float64(0) {
		t.Errorf("the loser's holder redeems nothing: %d %s", r.Code, r.Body)
	}
	a.redeem(t, t3, game) // 1 share of p1
	if got := collateral(); got != 0 {
		t.Errorf("collateral after every holder redeemed: %d, want 0", got)
	}
	if r := a.do(t, request{path: "/achievements/me", header: t2.auth}); !strings.Contains(r.Body.String(), `"trader"`) {
		t.Errorf("a trader's achievements: %s", r.Body)
	}
	r := a.do(t, request{path: "/games/" + game + "/market/trades?limit=2"})
	var trades []struct {
		Kind, OutcomeID string
		PriceMinor      int64
	}
	if err := jsonDecode(r.Body.Bytes(), &trades); err != nil || len(trades) != 2 || trades[0].Kind != "merge" || trades[1].Kind != "transfer" {
		t.Errorf("the newest trades: %s", r.Body)
	}
	kinds := map[string]float64{}
	for _, it := range a.historyItems(t, t1) {
		kinds[it["kind"].(string)] += it["amountMinor"].(float64)
	}
	if kinds["market payout"] != 6_000_000 {
		t.Errorf("the winner's holder's history: %v", kinds)
	}
	if _, err := a.Money.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
}

// redeemAtOnce has p redeem their shares in the market of game n times at
// once, and returns what each redemption paid.
func (a *testApp) redeemAtOnce(t *testing.T, p player, game string, n int) []float64 {
	t.Helper()
	var wg sync.WaitGroup
	paid := make([]float64, n)
	for i := range paid {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := a.redeem(t, p, game)
			if r.Code != 200 {
				t.Errorf("redeem: %d %s", r.Code, r.Body)
				return
			}
			paid[i] = r.json(t)["redeemedMinor"].(float64)
		}()
	}
	wg.Wait()
	return paid
}

// A game without a winner resolves its market at half a share each: a
// pair still pays exactly its 1 USDC of collateral.
func TestMarketOfACancelledGamePaysHalfAShare(t *testing.T) {
	a := newTestApp(t, roomyMarkets)
	p1, p2, game := a.marketGame(t, `{"rounds": 3, "roundSeconds": 3}`)
	t1, t2 := a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	a.placed(t, t1, game, "buy", p1.id, 700_000, 1, "")
	a.placed(t, t2, game, "buy", p2.id, 300_000, 1, "") // a pair: t1 paid 0.70, t2 0.30
	a.placed(t, t2, game, "buy", p2.id, 200_000, 2, "") // rests until the end
	// Nobody moves: the round times out for both and the game is cancelled.
	waitFor(t, func() bool {
		if _, err := a.Games.ExpireDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		return a.do(t, request{path: "/games/" + game}).json(t)["status"] == "cancelled"
	})
	v := a.marketOf(t, game)
	if v.Status != "resolved" || v.Resolution[p1.id] != 500_000 || v.Resolution[p2.id] != 500_000 {
		t.Fatalf("the market of a cancelled game: %+v", v)
	}
	a.wantAvailable(t, t2, 700_000, "the open buy released at the cancellation")
	for _, tr := range []player{t1, t2} {
		if r := a.redeem(t, tr, game); r.Code != 200 || r.json(t)["redeemedMinor"] != float64(500_000) {
			t.Errorf("redeem after a cancellation: %d %s, want half a share's 500000", r.Code, r.Body)
		}
	}
	a.wantAvailable(t, t1, 800_000, "paid 0.70, got 0.50")
	a.wantAvailable(t, t2, 1_200_000, "paid 0.30, got 0.50")
	if got := a.ledger(t, money.Market(game)); got != 0 {
		t.Errorf("collateral after both redeemed: %d, want 0", got)
	}
}
