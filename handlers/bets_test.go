package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"wager/domain"
	"wager/domain/money"
	"wager/domain/settlement"
)

// prepareBet prepares a bet and signs it; submitBet sends it.
func (a *testApp) prepareBet(t testing.TB, p player, game, on string, amount int64) (response, string) {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/bets/prepare", header: p.auth,
		body: jsonBody(map[string]any{"onUserId": on, "amountMinor": amount})})
	if r.Code != 200 {
		return r, ""
	}
	prep := r.json(t)
	signed := signPrepared(t, p.wallet, prep["transaction"].(string), nil)
	return r, jsonBody(map[string]string{"intentId": prep["intentId"].(string), "signedTransaction": signed})
}

func (a *testApp) submitBet(t testing.TB, p player, game, body string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/bets/submit", header: p.auth, body: body})
}

// bet places a bet and wants it confirmed into the pool.
func (a *testApp) bet(t testing.TB, p player, game, on string, amount int64) map[string]any {
	t.Helper()
	r, body := a.prepareBet(t, p, game, on, amount)
	if r.Code != 200 {
		t.Fatalf("prepare bet: %d %s", r.Code, r.Body)
	}
	s := a.submitBet(t, p, game, body)
	if s.Code != 200 {
		t.Fatalf("submit bet: %d %s", s.Code, s.Body)
	}
	got := s.json(t)
	if got["onUserId"] != on || got["amountMinor"] != float64(amount) || got["betId"] == nil || got["signature"] == nil || got["refunded"] != false {
		t.Fatalf("bet: %v", got)
	}
	return got
}

type betsView struct {
	Open       bool
	TotalMinor int64
	FeeBps     int
	Pools      []struct {
		UserID     string
		TotalMinor int64
		Bettors    int
	}
	Bets []struct {
		ID, UserID, Username, OnUserID, Signature, Status string
		AmountMinor, PayoutMinor                          int64
	}
}

func (a *testApp) betsOf(t testing.TB, game string) betsView {
	t.Helper()
	var v betsView
	r := a.do(t, request{path: "/games/" + game + "/bets"})
	if r.Code != 200 {
		t.Fatalf("bets: %d %s", r.Code, r.Body)
	}
	if err := jsonDecode(r.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// wantBetsSettled runs the settlement transfers and wants the game's escrow empty
// on chain and in the ledger, the bet pool empty, and the books balanced.
func (a *testApp) wantBetsSettled(t *testing.T, game string) {
	t.Helper()
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := a.onChain(t, a.Settlement.EscrowAddress(game)); got != 0 {
		t.Errorf("escrow holds %d on chain after settlement, want 0", got)
	}
	if e, b := a.ledger(t, money.Escrow(game)), a.ledger(t, money.BetPool(game)); e != 0 || b != 0 {
		t.Errorf("ledger after settlement: escrow %d, bet pool %d, want 0 and 0", e, b)
	}
	rec, err := a.Money.Reconcile(context.Background())
	if err != nil || !rec.Balanced {
		t.Fatalf("books after settlement: %+v %v", rec, err)
	}
}

func TestBetsPayOutToTheWinnersBettors(t *testing.T) {
	a := newTestApp(t, ownDB(t, noWorkers))
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	p1, p2, game := a.stakedGame(t, 100_000, `{"rounds": 1}`)
	s1, s2, s3 := a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 1_000_000)
	treasury := a.ledger(t, money.Treasury)

	a.checkWhoMayBet(t, game, p1, s1, s2)

	first := a.bet(t, s1, game, p1.id, 100_000)
	// The same signed bet twice is one bet.
	r, body := a.prepareBet(t, s2, game, p1.id, 200_000)
	if r.Code != 200 {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}
	one, two := a.submitBet(t, s2, game, body), a.submitBet(t, s2, game, body)
	if one.Code != 200 || two.Code != 200 || one.json(t)["betId"] != two.json(t)["betId"] {
		t.Fatalf("the same bet twice: %d %s / %d %s", one.Code, one.Body, two.Code, two.Body)
	}
	a.bet(t, s3, game, p2.id, 700_000)

	v := a.betsOf(t, game)
	if !v.Open || v.TotalMinor != 1_000_000 || v.FeeBps != 100 || len(v.Pools) != 2 || len(v.Bets) != 3 ||
		v.Pools[0].UserID != p1.id || v.Pools[0].TotalMinor != 300_000 || v.Pools[0].Bettors != 2 ||
		v.Pools[1].UserID != p2.id || v.Pools[1].TotalMinor != 700_000 || v.Pools[1].Bettors != 1 {
		t.Fatalf("bets before the end: %+v", v)
	}
	if v.Bets[2].ID != first["betId"] || v.Bets[2].UserID != s1.id || v.Bets[2].Status != "open" || v.Bets[2].PayoutMinor != 0 {
		t.Errorf("oldest bet: %+v", v.Bets[2])
	}
	evs, err := a.Events.Events(context.Background(), domain.GameStreamOf(game), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var lastBet string
	for _, ev := range evs {
		if ev.Name == "game:bet" {
			lastBet = string(ev.Data)
		}
	}
	for _, want := range []string{`"totalMinor": 1000000`, `"onUserId": "` + p2.id + `"`, `"bettors": 2`} {
		if !strings.Contains(lastBet, want) {
			t.Errorf("last game:bet %s lacks %s", lastBet, want)
		}
	}
	if got := a.onChain(t, a.Settlement.EscrowAddress(game)); got != 1_000_000 {
		t.Errorf("escrow holds %d on chain, want the 1000000 bet", got)
	}
	if rec, err := a.Money.Reconcile(context.Background()); err != nil || !rec.Balanced {
		t.Fatalf("books with open bets: %+v %v", rec, err)
	}

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	// T = 1000000, fee 10000, 990000 shared by 100000 and 200000 on the winner.
	if b := a.balances(t, s1.auth); b.available != 330_000 {
		t.Errorf("first winning bettor: %+v, want 330000 available", b)
	}
	if b := a.balances(t, s2.auth); b.available != 660_000 {
		t.Errorf("second winning bettor: %+v, want 660000 available", b)
	}
	if b := a.balances(t, s3.auth); b.available != 0 {
		t.Errorf("losing bettor: %+v, want nothing", b)
	}
	// The stakes' fee (2000) and the bets' (10000).
	if got := a.ledger(t, money.Treasury) - treasury; got != 12_000 {
		t.Errorf("treasury: +%d, want +12000", got)
	}
	v = a.betsOf(t, game)
	want := map[string][2]any{s1.id: {"won", int64(330_000)}, s2.id: {"won", int64(660_000)}, s3.id: {"lost", int64(0)}}
	for _, b := range v.Bets {
		if w := want[b.UserID]; b.Status != w[0] || b.PayoutMinor != w[1] {
			t.Errorf("bet of %s after the win: %s %d, want %v", b.Username, b.Status, b.PayoutMinor, w)
		}
	}
	if v.Open {
		t.Error("betting is open after the game ended")
	}
	a.wantBetsSettled(t, game)

	ns, _ := a.notifications(t, s1, "")
	if len(ns) == 0 || ns[0].Type != "bet_settled" || ns[0].Data["status"] != "won" || ns[0].Data["payoutMinor"] != float64(330_000) {
		t.Errorf("winning bettor's notifications: %+v", ns)
	}
	ns, _ = a.notifications(t, s3, "")
	if len(ns) == 0 || ns[0].Type != "bet_settled" || ns[0].Data["status"] != "lost" {
		t.Errorf("losing bettor's notifications: %+v", ns)
	}
	feed, _ := a.feed(t, "?limit=50")
	found := false
	for _, e := range feed {
		found = found || e.Type == "bet_won" && e.Actor.UserID == s2.id && e.Data["payoutMinor"] == float64(660_000)
	}
	if !found {
		t.Errorf("no bet_won entry for the second bettor in %+v", feed)
	}
	if r := a.do(t, request{path: "/achievements/me", header: s3.auth}); !strings.Contains(r.Body.String(), "first-bet") {
		t.Errorf("losing bettor's achievements: %s", r.Body)
	}
	kinds := map[string]float64{}
	for _, it := range a.historyItems(t, s1) {
		kinds[it["kind"].(string)] += it["amountMinor"].(float64)
		if it["gameId"] != game {
			t.Errorf("history line %v names no game", it)
		}
	}
	if kinds["bet"] != -100_000 || kinds["bet winnings"] != 330_000 {
		t.Errorf("winning bettor's history: %v", kinds)
	}
}

// checkWhoMayBet checks the rules of who may bet on what in game: not its
// player p1, not on spectator s2, not under the minimum, not on a game
// that does not exist, and nobody signed out.
func (a *testApp) checkWhoMayBet(t *testing.T, game string, p1, s1, s2 player) {
	t.Helper()
	r, _ := a.prepareBet(t, p1, game, p1.id, 100_000)
	r.wantError(t, 403, "FORBIDDEN")
	r, _ = a.prepareBet(t, s1, game, s2.id, 100_000)
	if e := r.wantError(t, 400, "VALIDATION_ERROR"); !strings.Contains(r.Body.String(), "onUserId") {
		t.Errorf("a bet on a non-player: %v", e)
	}
	r, _ = a.prepareBet(t, s1, game, p1.id, 9_999)
	if r.wantError(t, 400, "VALIDATION_ERROR"); !strings.Contains(r.Body.String(), "amountMinor") {
		t.Errorf("a bet under the minimum: %s", r.Body)
	}
	r, _ = a.prepareBet(t, s1, "00000000-0000-0000-0000-000000000000", p1.id, 100_000)
	r.wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/bets/prepare",
		body: jsonBody(map[string]any{"onUserId": p1.id, "amountMinor": 100_000})}).wantError(t, 401, "UNAUTHORIZED")
}

func TestBetConfirmedAfterTheFirstRevealIsRefunded(t *testing.T) {
	a := newTestApp(t, noWorkers)
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	s := a.spectatorWith(t, 500_000)
	r, body := a.prepareBet(t, s, game, p1.id, 200_000)
	if r.Code != 200 {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	// The first round is revealed: the game goes on, betting is closed.
	r, _ = a.prepareBet(t, s, game, p1.id, 100_000)
	r.wantError(t, 409, "BETTING_CLOSED")
	got := a.submitBet(t, s, game, body)
	if got.Code != 200 || got.json(t)["refunded"] != true {
		t.Fatalf("late bet: %d %s, want 200 refunded", got.Code, got.Body)
	}
	if b := a.balances(t, s.auth); b.available != 0 || b.onChain != 300_000 {
		t.Errorf("late bettor: %+v, want nothing on the balance: the bet goes back to the wallet", b)
	}
	v := a.betsOf(t, game)
	if v.Open || v.TotalMinor != 0 || v.Pools[0].TotalMinor != 0 || len(v.Bets) != 1 || v.Bets[0].Status != "refunded" ||
		v.Bets[0].PayoutMinor != 200_000 {
		t.Fatalf("bets after a late one: %+v", v)
	}
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := a.balances(t, s.auth); b.available != 0 || b.onChain != 500_000 {
		t.Errorf("late bettor after the refund: %+v, want the 200000 back in the wallet", b)
	}
	a.playTo(t, p1, p2, game, 1)
	a.wantBetsSettled(t, game)
}

func TestBetsWithNoneOnTheWinnerAreRefunded(t *testing.T) {
	a := newTestApp(t, noWorkers)
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 1}`)
	s1, s2 := a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 1_000_000)
	treasury := a.ledger(t, money.Treasury)
	a.bet(t, s1, game, p2.id, 123_457)
	a.bet(t, s2, game, p2.id, 500_000)
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	if b := a.balances(t, s1.auth); b.available != 123_457 {
		t.Errorf("first bettor: %+v, want 123457 back", b)
	}
	if b := a.balances(t, s2.auth); b.available != 500_000 {
		t.Errorf("second bettor: %+v, want 500000 back", b)
	}
	if got := a.ledger(t, money.Treasury) - treasury; got != 20_000 {
		t.Errorf("treasury: +%d, want +20000: the fee of the players' pot, nothing of the refunded bets", got)
	}
	for _, b := range a.betsOf(t, game).Bets {
		if b.Status != "refunded" || b.PayoutMinor != b.AmountMinor {
			t.Errorf("bet %+v not refunded in full", b)
		}
	}
	a.wantBetsSettled(t, game)
}

func TestBetsAreRefundedWhenTheGameIsCancelled(t *testing.T) {
	a := newTestApp(t, noWorkers)
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 1, "roundSeconds": 3}`)
	s1, s2 := a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 1_000_000)
	a.bet(t, s1, game, p1.id, 300_000)
	a.bet(t, s2, game, p2.id, 100_000)
	// Nobody moves: the round times out for both and the game is abandoned.
	waitFor(t, func() bool {
		if _, err := a.Games.ExpireDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		return a.do(t, request{path: "/games/" + game}).json(t)["status"] == "cancelled"
	})
	if b1, b2 := a.balances(t, s1.auth), a.balances(t, s2.auth); b1.available != 300_000 || b2.available != 100_000 {
		t.Errorf("after a cancellation: %+v %+v, want every bet back", b1, b2)
	}
	for _, b := range a.betsOf(t, game).Bets {
		if b.Status != "refunded" || b.PayoutMinor != b.AmountMinor {
			t.Errorf("bet %+v not refunded in full", b)
		}
	}
	a.wantBetsSettled(t, game)
}

func TestConnectFourBettingClosesAtTheFirstMove(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2 := a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	lobby := a.lobby(t, p1, `{"gameType": "connect4", "stakeMinor": 1000000}`)
	a.join(t, p1, lobby)
	game := a.join(t, p2, lobby)["gameId"].(string)
	s := a.spectatorWith(t, 500_000)
	a.bet(t, s, game, p2.id, 100_000)
	r := a.act(t, p1, game, `{"type": "move", "move": {"column": 3}}`)
	if r.Code != 200 {
		r = a.act(t, p2, game, `{"type": "move", "move": {"column": 3}}`)
	}
	if r.Code != 200 {
		t.Fatalf("first move: %d %s", r.Code, r.Body)
	}
	r, _ = a.prepareBet(t, s, game, p2.id, 100_000)
	r.wantError(t, 409, "BETTING_CLOSED")
	if v := a.betsOf(t, game); v.Open || v.TotalMinor != 100_000 {
		t.Fatalf("bets after the first move: %+v", v)
	}
}

// The attack an outside review made: with the day's deposit limit used up,
// a bettor prepares a bet while betting is open and sends it once the bet
// can no longer join its pool. Refunded to the platform balance, every
// such bet was a deposit past the limit (3.00 USDC available became 8.00,
// again and again). It goes back on chain to the wallet that paid it.
func TestABetRefusedWhenItLandsIsNoDepositPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stake  int64
		amount int64
		left   int // the rounds p1 wins after refuse, to end the game
		// refuse makes the prepared bet on p1 unable to join its pool.
		refuse func(t *testing.T, a *testApp, p1, p2 player, game string)
	}{
		{"betting closed at the first reveal", 1_000_000, 5_000_000, 1, func(t *testing.T, a *testApp, p1, p2 player, game string) {
			a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
			a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
		}},
		{"the pool reached its cap", 500_000, 5_000_000, 2, func(t *testing.T, a *testApp, p1, _ player, game string) {
			a.bet(t, a.spectatorWith(t, 1_000_000), game, p1.id, 1_000_000) // cap: 5 x the 1 USDC player pot
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestApp(t, noWorkers)
			ctx := context.Background()
			if _, err := a.Settlement.ProcessTransfers(ctx); err != nil { // other tests' leftovers
				t.Fatal(err)
			}
			p1, p2, game := a.stakedGame(t, tc.stake, `{"rounds": 3}`)
			// The deposit and the bet (a deposit too) use up the day's limit.
			bettor := a.spectatorWith(t, 3_000_000+tc.amount)
			a.putLimits(t, bettor, jsonBody(map[string]any{"depositMinor": map[string]int64{"day": 3_000_000 + tc.amount}}))
			a.depositNow(t, bettor, 3_000_000)
			r, signed := a.prepareBet(t, bettor, game, p1.id, tc.amount)
			if r.Code != 200 {
				t.Fatalf("prepare the bet while it may join the pool: %d %s", r.Code, r.Body)
			}
			a.prepareDeposit(t, bettor, 10_000).wantError(t, 409, "LIMIT_EXCEEDED")
			tc.refuse(t, a, p1, p2, game)
			got := a.submitBet(t, bettor, game, signed)
			if got.Code != 200 || got.json(t)["refunded"] != true {
				t.Fatalf("the refused bet: %d %s, want 200 refunded", got.Code, got.Body)
			}
			if b := a.balances(t, bettor.auth); b.available != 3_000_000 || b.onChain != 0 {
				t.Fatalf("the bettor once the refused bet landed: %+v, want 3000000 available, as before: the bet is no deposit", b)
			}
			if _, err := a.Settlement.ProcessTransfers(ctx); err != nil {
				t.Fatal(err)
			}
			if b := a.balances(t, bettor.auth); b.available != 3_000_000 || b.onChain != tc.amount {
				t.Errorf("the bettor after the refund: %+v, want 3000000 available and the %d back in the wallet", b, tc.amount)
			}
			transfers, _ := a.Settlement.Transfers(ctx, game)
			var refund *settlement.Transfer
			for i, tr := range transfers {
				if tr.Kind == settlement.KindRefund {
					refund = &transfers[i]
				}
			}
			if refund == nil || refund.Status != "confirmed" || refund.ToAddress != bettor.wallet.address() ||
				refund.AmountMinor != tc.amount || refund.Signature == nil {
				t.Fatalf("settlement transfers: %s, want a confirmed refund of %d to the bettor's wallet", transferList(transfers), tc.amount)
			}
			if h := a.historyItems(t, bettor); len(h) < 2 || h[0]["kind"] != "bet refund" || h[0]["amountMinor"] != float64(tc.amount) ||
				h[0]["signature"] != *refund.Signature || h[1]["kind"] != "bet" || h[1]["amountMinor"] != float64(-tc.amount) {
				t.Errorf("the bettor's history: %v, want the bet and its refund with the refund's signature", h)
			}
			if used := a.limits(t, bettor).Used; used.LossMinor.Day != 0 || used.DepositMinor.Day != 3_000_000 {
				t.Errorf("the bettor's limits used: %+v, want no loss (the bet was never in play) and the one deposit", used)
			}
			for _, b := range a.betsOf(t, game).Bets {
				if b.UserID == bettor.id && (b.Status != "refunded" || b.PayoutMinor != tc.amount) {
					t.Errorf("the refused bet: %+v, want refunded in full", b)
				}
			}
			a.playTo(t, p1, p2, game, tc.left)
			a.wantBetsSettled(t, game)
		})
	}
}
