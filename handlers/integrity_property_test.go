package handlers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	gamepkg "wager/domain/game"
	"wager/domain/money"
)

// Random staked games through the API, with random bets (some past the
// pool's cap), random trades (some past the market's cap), a random end
// (a resignation by either player, or a game played out) and, for the
// ends held for review, a random release or void, decided after all the
// games ended. After each game and each decision: the ledger balances, a
// held game's pool and market still hold every unit paid into them, and
// nobody has been paid from them. At the end every bet was paid exactly
// once (won, lost or refunded, and its bettor's balance is the sum of its
// bets' payouts), the pools and markets are empty once traders redeemed,
// the traders together hold what they deposited (the market takes no
// fee), and the treasury gained exactly the fees of the players' pots
// and of the pools that had winners. After each game and each decision, a
// proof of reserves counts every unit owed, each user's own path proves
// their share, and late donations wait in it, their donors', until their
// refunds land.
func TestHoldReleaseAndVoidConserveMoney(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			adminWallet := newWallet(t)
			a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
			h := &holdRun{a: a, admin: a.admin(t, adminWallet), r: rand.New(rand.NewPCG(seed, 0x686f6c64)), bets: map[string][]betOf{}}
			if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
				t.Fatal(err)
			}
			treasury := a.ledger(t, money.Treasury)
			h.others = a.liabilities(t)
			h.traders = []player{a.depositor(t, 20_000_000), a.depositor(t, 20_000_000), a.depositor(t, 20_000_000)}
			h.people = append(h.people, h.traders...)
			const deposited = 60_000_000
			for g := range 4 {
				h.playGame(t, g)
			}
			for _, game := range h.held {
				decision := []string{"release", "void"}[h.r.IntN(2)]
				res := a.decideReview(t, h.admin, game, decision, "decided at random by the property test")
				if res.Code != 200 {
					t.Fatalf("%s %s: %d %s", decision, game, res.Code, res.Body)
				}
				a.wantBooksBalance(t)
				a.wantReserves(t, h.people, h.others)
			}
			t.Logf("%d games, %d held", len(h.games), len(h.held))
			if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
				t.Fatal(err)
			}
			a.wantReserves(t, h.people, h.others)

			h.settleAll(t)
			var sum int64
			for _, tr := range h.traders {
				sum += a.balances(t, tr.auth).available
			}
			if sum != deposited {
				t.Errorf("the traders together hold %d, want the %d they deposited", sum, deposited)
			}
			if got := a.ledger(t, money.Treasury) - treasury; got != h.wantFee {
				t.Errorf("treasury gained %d, want %d: the players' fees and what the pools kept", got, h.wantFee)
			}
		})
	}
}

// betOf is a bet placed in a game: who and how much.
type betOf struct {
	bettor player
	amount int64
}

// holdRun is one seed's random games, and what they should have left.
type holdRun struct {
	a       *testApp
	admin   player
	r       *rand.Rand
	traders []player
	people  []player // everyone who may be owed anything
	others  int64    // what the users of other tests are owed
	games   []string
	bets    map[string][]betOf
	held    []string
	wantFee int64
}

// playGame plays the g-th staked game with random bets and trades to a
// random end, and checks that a held game's pool and market still hold
// every unit paid into them and nobody has been paid from them.
func (h *holdRun) playGame(t *testing.T, g int) {
	a, r := h.a, h.r
	stake := []int64{100_000, 500_000, 1_000_000}[r.IntN(3)]
	p1, p2, game := a.stakedGame(t, stake, `{"rounds": 3}`)
	h.games = append(h.games, game)
	donated := int64(0)
	players := []player{p1, p2}
	h.people = append(h.people, p1, p2)
	for range 1 + r.IntN(4) {
		s := a.spectatorWith(t, 3_000_000)
		h.people = append(h.people, s)
		amount := int64(10_000 * (1 + r.IntN(150)))
		res, body := a.prepareBet(t, s, game, players[r.IntN(2)].id, amount)
		if res.Code == http.StatusConflict {
			res.wantError(t, 409, "LIMIT_EXCEEDED")
			continue
		}
		if res.Code != 200 {
			t.Fatalf("game %d: prepare bet: %d %s", g, res.Code, res.Body)
		}
		if got := a.submitBet(t, s, game, body); got.Code != 200 || got.json(t)["refunded"] != false {
			t.Fatalf("game %d: submit bet: %d %s", g, got.Code, got.Body)
		}
		h.bets[game] = append(h.bets[game], betOf{s, amount})
	}
	for range r.IntN(6) {
		tr := h.traders[r.IntN(len(h.traders))]
		price := int64(10_000 * (1 + r.IntN(99)))
		res := a.order(t, tr, game, "buy", players[r.IntN(2)].id, price, 1+r.Int64N(4), "")
		if res.Code != http.StatusCreated {
			res.wantError(t, 409, "LIMIT_EXCEEDED")
		}
	}
	donor := a.spectatorWith(t, 1_000_000)
	h.people = append(h.people, donor)
	if r.IntN(2) == 0 {
		if res, _ := a.donate(t, donor, game, 200_000); res.Code != 200 {
			t.Fatalf("game %d: donate: %d %s", g, res.Code, res.Body)
		}
		donated = 200_000
	}
	fee, _ := gamepkg.Payout(2*stake + donated) // every end here has a winner
	h.wantFee += fee
	var late request // a donation signed now and landing after the end, refunded on chain
	if r.IntN(2) == 0 {
		prep := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/prepare", header: donor.auth,
			body: jsonBody(map[string]any{"amountMinor": 100_000})}).json(t)
		late = request{method: http.MethodPost, path: "/games/" + game + "/donations/submit", header: donor.auth,
			body: jsonBody(map[string]string{"intentId": prep["intentId"].(string),
				"signedTransaction": signPrepared(t, donor.wallet, prep["transaction"].(string), nil)})}
	}
	var pool int64
	for _, b := range h.bets[game] {
		pool += b.amount
	}
	switch r.IntN(3) {
	case 0: // a resignation at once
		a.act(t, players[r.IntN(2)], game, `{"type": "resign"}`)
	case 1: // a round, then a resignation
		a.playTo(t, p1, p2, game, 1)
		a.act(t, players[r.IntN(2)], game, `{"type": "resign"}`)
	default: // played out
		a.playTo(t, p2, p1, game, 2)
	}
	a.wantBooksBalance(t)
	if late.path != "" {
		if res := a.do(t, late); res.Code != 200 || res.json(t)["refunded"] != true {
			t.Fatalf("game %d: late donation: %d %s, want refunded", g, res.Code, res.Body)
		}
	}
	a.wantReserves(t, h.people, h.others)
	v := a.betsOf(t, game)
	if len(v.Bets) > 0 && v.Bets[0].Status == "held" || a.marketOf(t, game).Status == "held" {
		h.held = append(h.held, game)
		if got := a.ledger(t, money.BetPool(game)); got != pool {
			t.Fatalf("game %d held: its pool holds %d, want every bet's %d", g, got, pool)
		}
		for _, b := range v.Bets {
			if b.Status != "held" || b.PayoutMinor != 0 {
				t.Fatalf("game %d held: bet %+v paid or not held", g, b)
			}
		}
	}
}

// settleAll checks, once every game is decided, that every bet was paid
// exactly once and its bettor holds the payouts of their bets, and that
// the pools and markets are empty once the traders redeemed; it adds what
// the pools kept to the treasury's due.
func (h *holdRun) settleAll(t *testing.T) {
	a := h.a
	paid := map[string]int64{}
	for _, game := range h.games {
		var total, payouts int64
		for _, b := range a.betsOf(t, game).Bets {
			if b.Status != "won" && b.Status != "lost" && b.Status != "refunded" {
				t.Errorf("bet %+v is not settled", b)
			}
			total += b.AmountMinor
			payouts += b.PayoutMinor
			paid[b.UserID] += b.PayoutMinor
		}
		h.wantFee += total - payouts // the fee and what floors left, or 0 when refunded
		for _, tr := range h.traders {
			if res := a.redeem(t, tr, game); res.Code != 200 {
				t.Fatalf("redeem: %d %s", res.Code, res.Body)
			}
		}
		if p, m := a.ledger(t, money.BetPool(game)), a.ledger(t, money.Market(game)); p != 0 || m != 0 {
			t.Errorf("game %s after settling and redeeming: pool %d, market %d, want 0 and 0", game, p, m)
		}
	}
	for _, game := range h.games {
		for _, b := range h.bets[game] {
			if got := a.balances(t, b.bettor.auth).available; got != paid[b.bettor.id] {
				t.Errorf("bettor %s: balance %d, want the payouts of its bets %d", b.bettor.id, got, paid[b.bettor.id])
			}
		}
	}
}

// wantBooksBalance fails the test when the ledger does not sum to zero.
func (a *testApp) wantBooksBalance(t testing.TB) {
	t.Helper()
	r, err := a.Money.Reconcile(context.Background())
	if err != nil || r.LedgerTotalMinor != 0 || r.EntriesTotalMinor != 0 {
		t.Fatalf("the books: %+v %v", r, err)
	}
}
