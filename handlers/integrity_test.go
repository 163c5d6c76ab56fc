package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"wager/db"
	"wager/domain/money"
	"wager/views"
)

// admin signs in an admin wallet of a (its ADMIN_WALLETS) over the API.
func (a *testApp) admin(t testing.TB, w wallet) player {
	t.Helper()
	token, id := a.login(t, w, "agent-1")
	return player{wallet: w, id: id, auth: bearer(token, "agent-1")}
}

// The attack an outside review made: on a free game a second account of
// a player bet on the opponent, the player resigned, and the second
// account collected another bettor's money. A free game now takes no
// bets and has no market: nobody loses anything by throwing it.
func TestAFreeGameHasNoPoolAndNoMarket(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 0, `{"rounds": 3}`)
	alt, honest := a.spectatorWith(t, 2_000_000), a.depositor(t, 2_000_000)

	r, _ := a.prepareBet(t, alt, game, p2.id, 1_000_000)
	if e := r.wantError(t, 409, "BETTING_CLOSED"); !strings.Contains(e["message"].(string), "free game") {
		t.Errorf("the refusal does not say why: %v", e["message"])
	}
	a.order(t, honest, game, "buy", p2.id, 500_000, 2, "").wantError(t, 409, "BETTING_CLOSED")
	if v := a.betsOf(t, game); v.Open || v.TotalMinor != 0 {
		t.Errorf("a free game's bets: %+v, want closed and empty", v)
	}
	if r := a.do(t, request{path: "/games/" + game + "/bets"}); r.json(t)["poolCapMinor"] != float64(0) {
		t.Errorf("a free game's pool cap: %s", r.Body)
	}
	if m := a.do(t, request{path: "/games/" + game + "/market"}).json(t); m["status"] != "closed" || m["maxPairs"] != float64(0) {
		t.Errorf("a free game's market: %v, want closed with no pairs allowed", m)
	}
	a.act(t, p1, game, `{"type": "resign"}`)
	if b := a.balances(t, alt.auth); b.available != 0 || b.onChain != 2_000_000 {
		t.Errorf("the second account after the throw: %+v, want its 2 USDC untouched in its wallet", b)
	}
	a.wantAvailable(t, honest, 2_000_000, "the other trader after the throw")
	page := a.do(t, request{path: "/game/" + game, header: map[string]string{"Cookie": a.sessionCookie(t, honest.wallet)}}).Body.String()
	for _, want := range []string{"No bets on free games", "Free games have no market"} {
		if !strings.Contains(visibleText(page), want) {
			t.Errorf("the game page does not say %q", want)
		}
	}
}

// Each player's pool holds at most POOL_CAP_MULTIPLE times the player
// pot: a bet past it is refused at its prepare, and one that lands past it
// (two prepared at once) is refunded on chain to the bettor's wallet.
func TestPoolsAreCappedRelativeToThePlayerPot(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 100_000, `{"rounds": 3}`) // player pot 0.2 USDC: pools of 1 USDC
	s1, s2, s3 := a.spectatorWith(t, 2_000_000), a.spectatorWith(t, 2_000_000), a.spectatorWith(t, 2_000_000)

	a.bet(t, s1, game, p1.id, 600_000)
	r, _ := a.prepareBet(t, s2, game, p1.id, 500_000)
	e := r.wantError(t, 409, "LIMIT_EXCEEDED")
	if e["limit"] != "pool" || e["limitMinor"] != float64(1_000_000) || e["usedMinor"] != float64(600_000) ||
		!strings.Contains(e["message"].(string), "at most 1.00 USDC") || !strings.Contains(e["message"].(string), "0.40 USDC more") {
		t.Errorf("the refusal past the cap: %v", e)
	}
	a.bet(t, s2, game, p1.id, 400_000) // exactly to the cap
	if v := a.betsOf(t, game); v.Pools[0].TotalMinor != 1_000_000 {
		t.Errorf("pool on the first player: %d, want 1000000", v.Pools[0].TotalMinor)
	}

	// Two bets prepared while the pool had room for either, not both:
	// the second to land is refunded whole.
	r1, first := a.prepareBet(t, s2, game, p2.id, 700_000)
	r2, second := a.prepareBet(t, s3, game, p2.id, 700_000)
	if r1.Code != 200 || r2.Code != 200 {
		t.Fatalf("prepares: %d %d", r1.Code, r2.Code)
	}
	if got := a.submitBet(t, s2, game, first).json(t); got["refunded"] != false {
		t.Fatalf("first bet: %v", got)
	}
	if got := a.submitBet(t, s3, game, second).json(t); got["refunded"] != true {
		t.Errorf("the bet past the cap: %v, want refunded", got)
	}
	if v := a.betsOf(t, game); v.Pools[1].TotalMinor != 700_000 {
		t.Errorf("pool on the second player: %d, want 700000", v.Pools[1].TotalMinor)
	}
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := a.balances(t, s3.auth); b.available != 0 || b.onChain != 2_000_000 {
		t.Errorf("the refunded bettor: %+v, want the 0.7 USDC back in the wallet, nothing on the platform balance", b)
	}
	a.playTo(t, p1, p2, game, 2)
	a.wantBetsSettled(t, game)
}

// The market holds at most POOL_CAP_MULTIPLE x player pot / 1 USDC pairs:
// an order that would mint past it is refused whole.
func TestTheMarketCannotMintPastItsCap(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`) // player pot 2 USDC: 10 pairs
	t1, t2, t3, t4 := a.depositor(t, 5_000_000), a.depositor(t, 5_000_000), a.depositor(t, 5_000_000), a.depositor(t, 5_000_000)

	a.placed(t, t1, game, "buy", p1.id, 500_000, 6, "")
	if got := a.placed(t, t2, game, "buy", p2.id, 500_000, 6, ""); got.Order.FilledShares != 6 {
		t.Fatalf("the first mint: %+v", got)
	}
	a.placed(t, t3, game, "buy", p1.id, 500_000, 5, "") // rests
	r := a.order(t, t4, game, "buy", p2.id, 500_000, 5, "")
	e := r.wantError(t, 409, "LIMIT_EXCEEDED")
	if e["limit"] != "market" || e["limitPairs"] != float64(10) || e["usedPairs"] != float64(6) {
		t.Errorf("the refusal past the cap: %v", e)
	}
	a.wantAvailable(t, t4, 5_000_000, "the refused buyer")
	if orders := a.ordersOf(t, t4, game); len(orders) != 0 {
		t.Errorf("the refused buyer has orders: %+v", orders)
	}
	if got := a.placed(t, t4, game, "buy", p2.id, 500_000, 4, ""); got.Order.FilledShares != 4 {
		t.Errorf("a mint up to the cap: %+v", got)
	}
	m := a.do(t, request{path: "/games/" + game + "/market"}).json(t)
	if m["pairs"] != float64(10) || m["maxPairs"] != float64(10) {
		t.Errorf("market after reaching the cap: pairs %v of %v, want 10 of 10", m["pairs"], m["maxPairs"])
	}
	// At the cap, existing shares still change hands and pairs still
	// merge: t1 sells one share to t3's resting buy and rests the other,
	// which t2's sell of the other outcome merges with.
	a.placed(t, t1, game, "sell", p1.id, 400_000, 2, "")
	a.placed(t, t2, game, "sell", p2.id, 600_000, 2, "")
	if m := a.do(t, request{path: "/games/" + game + "/market"}).json(t); m["pairs"] != float64(9) {
		t.Errorf("pairs after a merge: %v, want 9", m["pairs"])
	}
	a.playTo(t, p1, p2, game, 2)
}

// Accounts linked to a player may neither bet on nor trade its game: one
// the player referred, one that tipped the other player, one the player
// sent a transfer; admins see the links with their reasons.
func TestLinkedAccountsMayNotBetOrTradeTheirPlayersGame(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)

	referred := a.referredDepositor(t, a.referrals(t, p1).Code, 2_000_000)
	tipper := a.depositor(t, 1_000_000)
	a.fund(t, tipper, 100_000) // tips go wallet to wallet
	if r, _ := a.tip(t, tipper, map[string]any{"toUserId": p2.id, "amountMinor": 10_000}); r.Code != 200 {
		t.Fatalf("tip: %d %s", r.Code, r.Body)
	}
	recipient := a.depositor(t, 1_000_000)
	a.fund(t, p1, 100_000)
	prep := a.prepare(t, p1.auth, recipient.address(), 50_000)
	if r := a.submit(t, p1.auth, prep["intentId"].(string), signPrepared(t, p1.wallet, prep["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("transfer: %d %s", r.Code, r.Body)
	}

	for _, p := range []player{referred, tipper, recipient} {
		a.fund(t, p, 200_000) // bets go from the wallet: the refusal is not for want of USDC
	}
	for _, c := range []struct {
		who    string
		p      player
		player string // whom the refusal names
	}{{"the referred account", referred, p1.id}, {"the tipper", tipper, p2.id}, {"the transfer's recipient", recipient, p1.id}} {
		r, _ := a.prepareBet(t, c.p, game, p1.id, 100_000)
		if e := r.wantError(t, 403, "LINKED_TO_PLAYER"); e["playerId"] != c.player {
			t.Errorf("%s's bet: refusal names %v, want %s", c.who, e["playerId"], c.player)
		}
		a.order(t, c.p, game, "buy", p2.id, 500_000, 1, "").wantError(t, 403, "LINKED_TO_PLAYER")
	}
	// An account with no link bets and trades as before.
	honest := a.depositor(t, 2_000_000)
	a.fund(t, honest, 500_000)
	a.bet(t, honest, game, p2.id, 100_000)
	a.placed(t, honest, game, "buy", p2.id, 500_000, 1, "")

	links := func(p player) []map[string]any {
		var out []map[string]any
		a.getJSON(t, admin, "/admin/users/"+p.id+"/links", &out)
		return out
	}
	reasonsOf := func(ls []map[string]any, id string) string {
		for _, l := range ls {
			if l["userId"] == id {
				return fmt.Sprint(l["reasons"])
			}
		}
		return ""
	}
	l1 := links(p1)
	if got := reasonsOf(l1, referred.id); got != "[referral]" {
		t.Errorf("link of the referred account to p1: %q", got)
	}
	if got := reasonsOf(l1, recipient.id); got != "[transfer]" {
		t.Errorf("link of the transfer's recipient to p1: %q", got)
	}
	if got := reasonsOf(links(p2), tipper.id); got != "[tip]" {
		t.Errorf("link of the tipper to p2: %q", got)
	}
	if got := reasonsOf(l1, honest.id) + reasonsOf(links(p2), honest.id); got != "" {
		t.Errorf("the honest bettor is linked: %q", got)
	}
	a.do(t, request{path: "/admin/users/" + p1.id + "/links", header: p2.auth}).wantError(t, 403, "ADMIN_ONLY")
	a.do(t, request{path: "/admin/users/00000000-0000-0000-0000-000000000000/links", header: admin.auth}).wantError(t, 404, "NOT_FOUND")
}

// fund puts usdc on chain in p's wallet.
func (a *testApp) fund(t testing.TB, p player, usdc int64) {
	t.Helper()
	if r := a.do(t, request{method: http.MethodPost, path: "/dev/faucet",
		body: jsonBody(map[string]any{"address": p.address(), "amountMinor": usdc})}); r.Code != 200 {
		t.Fatalf("faucet: %d %s", r.Code, r.Body)
	}
}

// With LINK_BY_IP, two accounts that signed in from one client address
// are linked; without it (the default) they are not.
func TestAccountsSignedInFromOneAddressAreLinkedWithLinkByIP(t *testing.T) {
	for _, byIP := range []bool{true, false} {
		t.Run(fmt.Sprint("LINK_BY_IP=", byIP), func(t *testing.T) {
			adminWallet := newWallet(t)
			a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "LINK_BY_IP": fmt.Sprint(byIP),
				"ADMIN_WALLETS": adminWallet.address()})
			// Every other account of this test signs in from httptest's
			// address; the two players each from their own.
			p1, p2 := a.depositorFrom(t, "198.51.100.1:4000"), a.depositorFrom(t, "198.51.100.2:4000")
			lobby := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 1000000, "settings": {"rounds": 3}}`)
			a.join(t, p1, lobby)
			game := a.join(t, p2, lobby)["gameId"].(string)
			alt := a.depositorFrom(t, "198.51.100.1:5000") // p1's address, another port
			stranger := a.depositorFrom(t, "203.0.113.9:4000")
			a.fund(t, alt, 100_000)
			a.fund(t, stranger, 100_000)
			r, _ := a.prepareBet(t, alt, game, p2.id, 100_000)
			if byIP {
				r.wantError(t, 403, "LINKED_TO_PLAYER")
			} else if r.Code != 200 {
				t.Errorf("without LINK_BY_IP a shared address links nobody: %d %s", r.Code, r.Body)
			}
			if r, _ := a.prepareBet(t, stranger, game, p2.id, 100_000); r.Code != 200 {
				t.Errorf("an account from another address: %d %s", r.Code, r.Body)
			}
			// The link's evidence: both sign-ins, once.
			var links []struct {
				UserID   string
				Evidence []struct {
					Kind     string
					By, To   struct{ UserID string }
					At, ToAt *time.Time
				}
			}
			a.getJSON(t, a.admin(t, adminWallet), "/admin/users/"+alt.id+"/links", &links)
			if !byIP {
				if len(links) != 0 {
					t.Errorf("links without LINK_BY_IP: %+v", links)
				}
				return
			}
			if len(links) != 1 || links[0].UserID != p1.id || len(links[0].Evidence) != 1 {
				t.Fatalf("the links of the account on p1's address: %+v, want one to p1 with one piece of evidence", links)
			}
			if e := links[0].Evidence[0]; e.Kind != "same-address" || e.By.UserID != alt.id || e.To.UserID != p1.id || e.At == nil || e.ToAt == nil {
				t.Errorf("the evidence: %+v, want the same address, by the account asked about, with both sign-ins", e)
			}
		})
	}
}

// depositorFrom is depositor signed in from the client address addr.
func (a *testApp) depositorFrom(t testing.TB, addr string) player {
	t.Helper()
	w := newWallet(t)
	msg := a.requestChallenge(t, w, "agent-1")
	r := a.do(t, request{method: http.MethodPost, path: "/auth/login-wallet", header: appHeaders("agent-1"), remoteAddr: addr,
		body: jsonBody(map[string]string{"address": w.address(), "signedMessage": w.sign(msg)})})
	if r.Code != 200 {
		t.Fatalf("login: %d %s", r.Code, r.Body)
	}
	m := r.json(t)
	p := player{wallet: w, id: m["user"].(map[string]any)["id"].(string), auth: bearer(m["access_token"].(string), "agent-1")}
	a.fund(t, p, 2_000_000)
	prep := a.prepare(t, p.auth, a.depositAddress(t, p.auth), 2_000_000)
	if r := a.submit(t, p.auth, prep["intentId"].(string), signPrepared(t, p.wallet, prep["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}
	return p
}

// heldGame is a staked game (1 USDC a player) with bets of 3.5 USDC and a
// pair of shares traded, more than its player pot, that p1 resigns: its
// bets and market are held for review.
type heldGame struct {
	p1, p2, s1, s2, t1, t2 player
	game                   string
}

func (a *testApp) holdAGame(t *testing.T, end func(p1, p2 player, game string)) heldGame {
	t.Helper()
	var h heldGame
	h.p1, h.p2, h.game = a.stakedGame(t, 1_000_000, `{"rounds": 1, "roundSeconds": 60}`)
	h.s1, h.s2 = a.spectatorWith(t, 3_000_000), a.spectatorWith(t, 3_000_000)
	h.t1, h.t2 = a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	a.bet(t, h.s1, h.game, h.p2.id, 2_500_000)
	a.bet(t, h.s2, h.game, h.p1.id, 1_000_000)
	a.placed(t, h.t1, h.game, "buy", h.p1.id, 600_000, 1, "")
	a.placed(t, h.t2, h.game, "buy", h.p2.id, 400_000, 1, "") // a pair minted
	a.placed(t, h.t1, h.game, "buy", h.p1.id, 100_000, 1, "") // rests: cancelled at the end
	end(h.p1, h.p2, h.game)
	return h
}

func resign(a *testApp, t *testing.T) func(p1, p2 player, game string) {
	return func(p1, _ player, game string) {
		if r := a.act(t, p1, game, `{"type": "resign"}`); r.Code != 200 {
			t.Fatalf("resign: %d %s", r.Code, r.Body)
		}
	}
}

// A staked game won by resignation with more bet and traded on it than
// its stakes: the players are paid, its bets and market are held and
// their holders told; the admin queue shows it; a release pays them as
// the game ended, once.
func TestASuspiciousEndHoldsTheBetsAndMarketUntilReleased(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)
	h := a.holdAGame(t, resign(a, t))

	// The winner is paid at once: 2 USDC less the 1% fee.
	a.wantAvailable(t, h.p2, 1_980_000, "the winner")
	for _, b := range a.betsOf(t, h.game).Bets {
		if b.Status != "held" || b.PayoutMinor != 0 {
			t.Errorf("bet %+v, want held and unpaid", b)
		}
	}
	if m := a.marketOf(t, h.game); m.Status != "held" {
		t.Errorf("market: %s, want held", m.Status)
	}
	// The settlement's own record says why, as the game's result does.
	var stored struct{ ReviewHeld bool }
	var reason string
	if err := a.DB.QueryRowContext(t.Context(), "SELECT result, coalesce(result->>'reviewReason', '') FROM settlements WHERE game_id = ?",
		h.game).Scan(db.JSON(&stored), &reason); err != nil || !stored.ReviewHeld || reason != "resign" {
		t.Errorf("the stored settlement: held %v, reason %q (%v), want held for resign", stored.ReviewHeld, reason, err)
	}
	a.redeem(t, h.t2, h.game).wantError(t, 409, "CONFLICT")
	a.wantAvailable(t, h.t1, 400_000, "the trader whose resting buy was cancelled at the end")
	for _, p := range []player{h.s1, h.s2, h.t1, h.t2} {
		ns, _ := a.notifications(t, p, "")
		if countType(ns, "review_hold") != 1 {
			t.Errorf("%s got %d review_hold notifications, want 1", p.id, countType(ns, "review_hold"))
		}
	}
	page := visibleText(a.do(t, request{path: "/game/" + h.game, header: map[string]string{"Cookie": a.sessionCookie(t, h.s1.wallet)}}).Body.String())
	for _, want := range []string{"The result is under review", "2.50 USDC on", "held for review"} {
		if !strings.Contains(page, want) {
			t.Errorf("the bettor's game page does not say %q", want)
		}
	}

	// A tip after the game links s2 to p1: the queue shows it.
	a.fund(t, h.s2, 100_000)
	if r, _ := a.tip(t, h.s2, map[string]any{"toUserId": h.p1.id, "amountMinor": 10_000}); r.Code != 200 {
		t.Fatalf("tip: %d %s", r.Code, r.Body)
	}
	var queue []struct {
		GameID, Status, WinnerID, Reason string
		PoolsMinor, VolumeMinor          int64
		Bettors                          []struct{ UserID, OnUserID string }
		Traders                          []struct{ UserID, OutcomeID string }
		Links                            []struct {
			UserID, PlayerID string
			Reasons          []string
		}
		History []map[string]any
	}
	a.getJSON(t, admin, "/admin/integrity", &queue)
	if len(queue) != 1 || queue[0].GameID != h.game || queue[0].Status != "held" || queue[0].WinnerID != h.p2.id ||
		queue[0].Reason != "resign" || queue[0].PoolsMinor != 3_500_000 || queue[0].VolumeMinor != 1_000_000 {
		t.Fatalf("queue: %+v", queue)
	}
	if q := queue[0]; len(q.Bettors) != 2 || len(q.Traders) != 2 || len(q.Links) != 1 || q.Links[0].UserID != h.s2.id ||
		q.Links[0].PlayerID != h.p1.id || !slices.Equal(q.Links[0].Reasons, []string{"tip"}) {
		t.Errorf("the case: bettors %+v traders %+v links %+v", q.Bettors, q.Traders, q.Links)
	}
	a.do(t, request{path: "/admin/integrity", header: h.s1.auth}).wantError(t, 403, "ADMIN_ONLY")
	a.do(t, request{method: http.MethodPost, path: "/admin/integrity/" + h.game + "/release", header: h.p2.auth}).wantError(t, 403, "ADMIN_ONLY")

	treasury := a.ledger(t, money.Treasury)
	r := a.decideReview(t, admin, h.game, "release", "The first round was played out before the resignation.")
	if r.Code != 200 {
		t.Fatalf("release: %d %s", r.Code, r.Body)
	}
	if got := r.json(t); got["status"] != "released" || got["decidedBy"].(map[string]any)["userId"] != admin.id || got["decidedAt"] == nil {
		t.Errorf("release: %v", got)
	}
	// As the game ended: p2 won; T = 3.5 USDC, fee 35000, all to s1.
	if b := a.balances(t, h.s1.auth); b.available != 3_465_000 {
		t.Errorf("the winning bettor: %+v, want 3.465 USDC", b)
	}
	if b := a.balances(t, h.s2.auth); b.available != 0 {
		t.Errorf("the losing bettor: %+v, want nothing", b)
	}
	if got := a.ledger(t, money.Treasury) - treasury; got != 35_000 {
		t.Errorf("treasury: +%d, want the bets' fee of 35000", got)
	}
	if got := a.redeem(t, h.t2, h.game).json(t)["redeemedMinor"]; got != float64(1_000_000) {
		t.Errorf("the winner's share redeems %v, want 1000000", got)
	}
	a.decideReview(t, admin, h.game, "release", "again").wantError(t, 409, "CONFLICT")
	a.decideReview(t, admin, h.game, "void", "again").wantError(t, 409, "CONFLICT")
	a.decideReview(t, admin, h.p1.id, "void", "not a game").wantError(t, 404, "NOT_FOUND")
	a.getJSON(t, admin, "/admin/integrity", &queue)
	if len(queue) != 0 {
		t.Errorf("queue after the release: %+v", queue)
	}
	var log []struct {
		Action, Target string
		Actor          struct{ UserID string }
	}
	a.getJSON(t, admin, "/admin/audit", &log)
	if len(log) == 0 || log[0].Action != "integrity.release" || log[0].Target != "game:"+h.game || log[0].Actor.UserID != admin.id {
		t.Errorf("audit log: %+v", log)
	}
	page = visibleText(a.do(t, request{path: "/game/" + h.game, header: map[string]string{"Cookie": a.sessionCookie(t, h.s1.wallet)}}).Body.String())
	if !strings.Contains(page, "held for review, and released") || !strings.Contains(page, "won 3.465 USDC") {
		t.Errorf("the bettor's game page after the release: %s", page)
	}
	a.wantBetsSettled(t, h.game)
}

// A round lost on time holds a game as a resignation does; a void refunds
// every bet in full and pays half a USDC a share.
func TestAVoidRefundsEveryBetAndPaysHalfAShare(t *testing.T) {
	adminWallet := newWallet(t)
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()}, clk.now)
	admin := a.admin(t, adminWallet)
	h := a.holdAGame(t, func(_, p2 player, game string) {
		a.act(t, p2, game, `{"type": "move", "move": "rock"}`)
		clk.advance(61 * time.Second) // the round's 60 s run out for p1
		if _, err := a.Games.ExpireDue(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	var queue []struct{ GameID, Reason string }
	a.getJSON(t, admin, "/admin/integrity", &queue)
	if len(queue) != 1 || queue[0].GameID != h.game || queue[0].Reason != "timeout" {
		t.Fatalf("queue after a round lost on time: %+v", queue)
	}
	r := a.decideReview(t, admin, h.game, "void", "Lost on time in the only round.")
	if r.Code != 200 || r.json(t)["status"] != "voided" {
		t.Fatalf("void: %d %s", r.Code, r.Body)
	}
	if b := a.balances(t, h.s1.auth); b.available != 2_500_000 {
		t.Errorf("first bettor: %+v, want 2.5 USDC back", b)
	}
	if b := a.balances(t, h.s2.auth); b.available != 1_000_000 {
		t.Errorf("second bettor: %+v, want 1 USDC back", b)
	}
	for _, p := range []player{h.t1, h.t2} {
		if got := a.redeem(t, p, h.game).json(t)["redeemedMinor"]; got != float64(500_000) {
			t.Errorf("a share after a void redeems %v, want 500000", got)
		}
	}
	ns, _ := a.notifications(t, h.s1, "")
	if len(ns) == 0 || ns[0].Type != "bet_settled" || ns[0].Data["status"] != "refunded" {
		t.Errorf("the bettor's newest notification: %+v", ns)
	}
	a.wantBetsSettled(t, h.game)
}

// The same game won on the board, with as much bet on it, is settled at
// once: only resignations and games lost on time are held.
func TestAGameWonOnTheBoardIsNotHeld(t *testing.T) {
	a := newTestApp(t, noWorkers)
	h := a.holdAGame(t, func(p1, p2 player, game string) { a.playTo(t, p2, p1, game, 1) })
	for _, b := range a.betsOf(t, h.game).Bets {
		if b.Status != "won" && b.Status != "lost" {
			t.Errorf("bet %+v, want settled", b)
		}
	}
	if m := a.marketOf(t, h.game); m.Status != "resolved" {
		t.Errorf("market: %s, want resolved", m.Status)
	}
	a.wantBetsSettled(t, h.game)
}

// A link made after a bet (a player tips a bettor during the game) holds
// the game's bets and market at its end, however it ended.
func TestALinkMadeAfterABetHoldsTheGame(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	fixer, honest := a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 1_000_000)
	a.bet(t, fixer, game, p2.id, 100_000)
	a.bet(t, honest, game, p1.id, 100_000)
	a.fund(t, p2, 100_000)
	if r, _ := a.tip(t, p2, map[string]any{"toUserId": fixer.id, "amountMinor": 10_000, "context": map[string]string{"type": "game", "id": game}}); r.Code != 200 {
		t.Fatalf("the player's tip to the bettor: %d %s", r.Code, r.Body)
	}
	a.playTo(t, p2, p1, game, 2) // played out, the pools well under the pot: only the link holds it
	for _, b := range a.betsOf(t, game).Bets {
		if b.Status != "held" {
			t.Errorf("bet %+v, want held", b)
		}
	}
	var queue []struct{ GameID, Reason string }
	a.getJSON(t, admin, "/admin/integrity", &queue)
	if len(queue) != 1 || queue[0].GameID != game || queue[0].Reason != "linked" {
		t.Fatalf("queue: %+v, want the game held because of the link", queue)
	}
	page := visibleText(a.do(t, request{path: "/game/" + game, header: map[string]string{"Cookie": a.sessionCookie(t, honest.wallet)}}).Body.String())
	if !strings.Contains(page, "someone who bet on or traded this game is linked to one of its players") {
		t.Errorf("the game page does not say why it is held: %s", page)
	}
	if r := a.decideReview(t, admin, game, "void", "A player tipped a bettor during the game."); r.Code != 200 {
		t.Fatalf("void: %d %s", r.Code, r.Body)
	}
	a.wantBetsSettled(t, game)
}

// The review queue's page shows bettors, holdings and links: nobody but an
// admin reads it or decides from it.
func TestTheReviewQueuePageIsForAdminsOnly(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	h := a.holdAGame(t, resign(a, t))
	bettor := a.usernameOf(t, h.s1)
	for _, r := range []response{
		a.do(t, request{path: "/admin/integrity/page"}),
		a.do(t, request{path: "/admin/integrity", header: map[string]string{"Accept": "text/html"}}),
	} {
		if r.Code != http.StatusSeeOther || !strings.HasPrefix(r.Header().Get("Location"), "/login") || strings.Contains(r.Body.String(), bettor) {
			t.Errorf("a visitor who is not signed in: %d to %q, body has the bettor: %v", r.Code, r.Header().Get("Location"), strings.Contains(r.Body.String(), bettor))
		}
	}
	player := a.sessionCookie(t, h.p1.wallet)
	if r := a.do(t, request{path: "/admin/integrity/page", header: map[string]string{"Cookie": player}}); r.Code != http.StatusForbidden || strings.Contains(r.Body.String(), bettor) {
		t.Errorf("a player: %d, body has the bettor: %v", r.Code, strings.Contains(r.Body.String(), bettor))
	}
	form := url.Values{"_csrf": {a.csrfOf(t, player)}}
	if r := a.do(t, request{method: http.MethodPost, path: "/admin/integrity/page/" + h.game + "/void", body: form.Encode(),
		header: map[string]string{"Cookie": player, "Content-Type": "application/x-www-form-urlencoded"}}); r.Code != http.StatusForbidden {
		t.Errorf("a player's void: %d", r.Code)
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/admin/integrity/page/" + h.game + "/void"}); r.Code != http.StatusSeeOther && r.Code != http.StatusForbidden {
		t.Errorf("a visitor's void: %d", r.Code)
	}
	for _, b := range a.betsOf(t, h.game).Bets {
		if b.Status != "held" {
			t.Fatalf("bet %+v after refused voids, want still held", b)
		}
	}

	// The admin reads the case and voids it from the page.
	cookie := a.sessionCookie(t, adminWallet)
	page := visibleText(a.do(t, request{path: "/admin/integrity/page", header: map[string]string{"Cookie": cookie}}).Body.String())
	for _, want := range []string{"won; the other player resigned.", bettor + " bet 2.50 USDC on", "3.50 USDC bet and 1.00 USDC paid for shares, against a player pot of 2.00 USDC"} {
		if !strings.Contains(page, want) {
			t.Errorf("the admin's queue does not say %q:\n%s", want, page)
		}
	}
	void := func(form url.Values) response {
		return a.do(t, request{method: http.MethodPost, path: "/admin/integrity/page/" + h.game + "/void", body: form.Encode(),
			header: map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}})
	}
	csrf := a.csrfOf(t, cookie)
	// Without a reason, confirmed or not, nothing is decided.
	for _, form := range []url.Values{{"_csrf": {csrf}}, {"_csrf": {csrf}, "reason": {" "}, "confirmed": {"yes"}}} {
		if r := void(form); r.Code != http.StatusBadRequest || !strings.Contains(visibleText(r.Body.String()), "Give a reason") {
			t.Errorf("a void without a reason: %d, want 400 and the page asking for one:\n%s", r.Code, visibleText(r.Body.String()))
		}
	}
	// With a reason, the page first asks for a confirmation.
	const reason = "Thrown for the bettors: voided."
	r := void(url.Values{"_csrf": {csrf}, "reason": {reason}})
	ask := visibleText(r.Body.String())
	if r.Code != http.StatusOK || !strings.Contains(ask, "Void game "+h.game+"? Every bet will be refunded in full") || !strings.Contains(ask, "Your reason: "+reason) {
		t.Fatalf("the void's first step: %d, want a confirmation that repeats the reason:\n%s", r.Code, ask)
	}
	for _, b := range a.betsOf(t, h.game).Bets {
		if b.Status != "held" {
			t.Fatalf("bet %+v before the confirmation, want still held", b)
		}
	}
	r = void(url.Values{"_csrf": {csrf}, "reason": {reason}, "confirmed": {"yes"}})
	if r.Code != http.StatusSeeOther {
		t.Fatalf("the admin's confirmed void: %d %s", r.Code, r.Body)
	}
	done := visibleText(a.do(t, request{path: r.Header().Get("Location"), header: map[string]string{"Cookie": cookie}}).Body.String())
	if !strings.Contains(done, "Voided game "+h.game+": every bet was refunded in full") || !strings.Contains(done, "Your reason: "+reason) ||
		!strings.Contains(done, "Nothing is held for review.") {
		t.Errorf("the queue after the void: %s", done)
	}
	a.wantBetsSettled(t, h.game)
}

// An order left resting before its owner was linked to a player does not
// trade once they are: the next order that would fill it cancels it
// instead (its money back), and rests itself.
func TestALinkMadeAfterAnOrderStopsItTrading(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	fixer, honest := a.depositor(t, 2_000_000), a.depositor(t, 2_000_000)
	resting := a.placed(t, fixer, game, "buy", p2.id, 400_000, 2, "").Order.ID
	a.fund(t, p2, 100_000)
	if r, _ := a.tip(t, p2, map[string]any{"toUserId": fixer.id, "amountMinor": 10_000}); r.Code != 200 {
		t.Fatalf("the player's tip to the trader: %d %s", r.Code, r.Body)
	}
	// 0.60 for p1 would mint pairs with the fixer's 0.40 for p2.
	got := a.placed(t, honest, game, "buy", p1.id, 600_000, 2, "")
	if got.Order.FilledShares != 0 || got.Order.Status != "open" || len(got.Trades) != 0 {
		t.Errorf("an order crossing the linked trader's: %+v, want it resting, unfilled", got)
	}
	for _, o := range a.ordersOf(t, fixer, game) {
		if o.ID == resting && o.Status != "cancelled" {
			t.Errorf("the linked trader's order: %s, want cancelled", o.Status)
		}
	}
	a.wantAvailable(t, fixer, 2_000_000, "the linked trader, the order's money back")
	m := a.marketOf(t, game)
	for _, o := range m.Outcomes {
		if o.VolumeShares != 0 {
			t.Errorf("shares of %s traded: %d, want none", o.Username, o.VolumeShares)
		}
	}
	for _, b := range m.Book {
		if b.OutcomeID == p2.id && len(b.Bids) != 0 {
			t.Errorf("bids for %s in the book: %+v, want the linked trader's gone", p2.id, b.Bids)
		}
	}
}

// decideReview posts p's release or void of game with reason.
func (a *testApp) decideReview(t testing.TB, p player, game, decision, reason string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/admin/integrity/" + game + "/" + decision, header: p.auth,
		body: jsonBody(map[string]string{"reason": reason})})
}

// depositFor puts usdc on chain in p's wallet and deposits it to p's
// platform balance.
func (a *testApp) depositFor(t testing.TB, p player, usdc int64) {
	t.Helper()
	a.fund(t, p, usdc)
	prep := a.prepare(t, p.auth, a.depositAddress(t, p.auth), usdc)
	if r := a.submit(t, p.auth, prep["intentId"].(string), signPrepared(t, p.wallet, prep["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}
}

// caseConflicts is the conflicts GET /admin/integrity shows admin for the
// held game.
func (a *testApp) caseConflicts(t testing.TB, admin player, game string) []string {
	t.Helper()
	var queue []struct {
		GameID    string
		Conflicts []struct{ Rule, Why string }
	}
	a.getJSON(t, admin, "/admin/integrity", &queue)
	for _, c := range queue {
		if c.GameID == game {
			out := []string{}
			for _, k := range c.Conflicts {
				out = append(out, k.Rule+": "+k.Why)
			}
			return out
		}
	}
	t.Fatalf("game %s is not in the queue: %+v", game, queue)
	return nil
}

// The attack an outside review made: a member of staff who bet 1.50 USDC
// on a player of a held game and held 5 of his shares found the game in
// the review queue with his own name under Bettors and Holdings, and
// released it with one click. Staff with a stake in a held game (a bet,
// shares in its market, a tip to one of its players, a link to one of its
// bettors, an entry in its arena) are refused on release and on void, the
// game stays held, and an admin without a stake decides it.
func TestStaffWithAStakeInAHeldGameMayNotDecideIt(t *testing.T) {
	kinds := []string{"bettor", "holder", "tipper", "referrer", "entrant", "clean"}
	wallets, addresses := map[string]wallet{}, []string{}
	for _, k := range kinds {
		wallets[k] = newWallet(t)
		addresses = append(addresses, wallets[k].address())
	}
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": strings.Join(addresses, ",")})
	staff := map[string]player{}
	for _, k := range kinds {
		staff[k] = a.admin(t, wallets[k])
	}
	clean := staff["clean"]

	var arena string
	for _, c := range []struct {
		staff string
		// stake gives the member of staff a stake in the game before it
		// ends and returns why they may not decide it, as the refusal says.
		stake func(t *testing.T, admin, p1, p2 player, game string) string
		held  func(t *testing.T, game string) // after the game was held
	}{
		{"bettor", func(t *testing.T, admin, p1, _ player, game string) string {
			a.fund(t, admin, 2_000_000)
			a.bet(t, admin, game, p1.id, 1_500_000)
			return "you bet 1.50 USDC on this game"
		}, nil},
		{"holder", func(t *testing.T, admin, p1, p2 player, game string) string {
			a.depositFor(t, admin, 3_000_000)
			a.placed(t, admin, game, "buy", p1.id, 500_000, 5, "")
			if got := a.placed(t, a.depositor(t, 3_000_000), game, "buy", p2.id, 500_000, 5, ""); got.Order.FilledShares != 5 {
				t.Fatalf("the shares were not minted: %+v", got)
			}
			return "you hold 5 shares of " + a.usernameOf(t, p1)
		}, nil},
		{"tipper", func(t *testing.T, admin, p1, _ player, game string) string {
			a.fund(t, admin, 100_000)
			if r, _ := a.tip(t, admin, map[string]any{"toUserId": p1.id, "amountMinor": 10_000}); r.Code != 200 {
				t.Fatalf("the tip: %d %s", r.Code, r.Body)
			}
			return "you tipped " + a.usernameOf(t, p1) + " 0.01 USDC"
		}, nil},
		{"referrer", func(t *testing.T, admin, _, p2 player, game string) string {
			friend := a.referredPlayer(t, a.referrals(t, admin).Code)
			a.fund(t, friend, 500_000)
			a.bet(t, friend, game, p2.id, 100_000)
			return "you are linked to " + a.usernameOf(t, friend) + ": one referred the other"
		}, nil},
		{"entrant", func(t *testing.T, admin, _, _ player, _ string) string {
			arena = a.do(t, request{method: http.MethodPost, path: "/tournaments", header: admin.auth, body: jsonBody(map[string]any{
				"name": "Staff arena", "gameType": "rps", "entryFeeMinor": 0, "durationMinutes": 30,
				"startsAt": time.Now().Add(time.Hour).Format(time.RFC3339)})}).json(t)["id"].(string)
			if r := a.do(t, request{method: http.MethodPost, path: "/tournaments/" + arena + "/join", header: admin.auth}); r.Code != 200 {
				t.Fatalf("join the arena: %d %s", r.Code, r.Body)
			}
			return "you entered this game's arena, Staff arena"
		}, func(t *testing.T, game string) {
			// Arena games are free today, so none is held: this held game
			// stands for one once it ended.
			if _, err := a.DB.ExecContext(t.Context(), "UPDATE games SET tournament_id = ? WHERE id = ?", arena, game); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.staff, func(t *testing.T) {
			admin := staff[c.staff]
			var why string
			h := a.holdAGame(t, func(p1, p2 player, game string) {
				why = c.stake(t, admin, p1, p2, game)
				resign(a, t)(p1, p2, game)
			})
			if c.held != nil {
				c.held(t, h.game)
			}
			for _, decision := range []string{"release", "void"} {
				e := a.decideReview(t, admin, h.game, decision, "I checked the rounds").wantError(t, 403, "CONFLICT_OF_INTEREST")
				if msg := e["message"].(string); !strings.Contains(msg, why) || !strings.Contains(msg, "another member of staff") {
					t.Errorf("the refusal of the %s says %q, want why (%q) and that another member of staff must decide", decision, msg, why)
				}
			}
			for _, b := range a.betsOf(t, h.game).Bets {
				if b.Status != "held" {
					t.Errorf("bet %+v after the refusals, want still held", b)
				}
			}
			if m := a.marketOf(t, h.game); m.Status != "held" {
				t.Errorf("market after the refusals: %s, want held", m.Status)
			}
			if got := a.caseConflicts(t, admin, h.game); len(got) == 0 || !strings.Contains(strings.Join(got, "; "), why) {
				t.Errorf("the case as the %s sees it: conflicts %q, want %q", c.staff, got, why)
			}
			if got := a.caseConflicts(t, clean, h.game); len(got) != 0 {
				t.Errorf("the case as an admin without a stake sees it: conflicts %q, want none", got)
			}
			r := a.decideReview(t, clean, h.game, "release", "No stake of mine; the resignation followed a fair round.")
			if r.Code != 200 || r.json(t)["status"] != "released" {
				t.Fatalf("the release by an admin without a stake: %d %s", r.Code, r.Body)
			}
			a.wantBetsSettled(t, h.game)
		})
	}
}

// An admin's decision carries a typed reason: a release or void without
// one, or with one that is blank, too long or disguised, is refused (400
// naming reason) and the game stays held; the reason given is kept with
// the review and in the audit log.
func TestReleaseAndVoidTakeAReasonThatTheAuditLogKeeps(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)
	h := a.holdAGame(t, resign(a, t))

	for _, c := range []struct{ what, body string }{
		{"no body", ""},
		{"no reason", `{}`},
		{"a blank reason", `{"reason": "  \n  "}`},
		{"a reason that reverses its text", jsonBody(map[string]string{"reason": "fair \u202egame"})},
		{"a reason of 501 characters", jsonBody(map[string]string{"reason": strings.Repeat("x", 501)})},
	} {
		for _, decision := range []string{"release", "void"} {
			r := a.do(t, request{method: http.MethodPost, path: "/admin/integrity/" + h.game + "/" + decision, header: admin.auth, body: c.body})
			if r.Code != 400 || r.json(t)["code"] != "VALIDATION_ERROR" {
				t.Fatalf("%s with %s: %d %s, want 400 VALIDATION_ERROR", decision, c.what, r.Code, r.Body)
			}
			if fields, _ := r.json(t)["fields"].(map[string]any); fields["reason"] == nil {
				t.Errorf("%s with %s: %s, want the error to name reason", decision, c.what, r.Body)
			}
		}
	}
	for _, b := range a.betsOf(t, h.game).Bets {
		if b.Status != "held" {
			t.Fatalf("bet %+v after the refused decisions, want still held", b)
		}
	}

	const reason = "The resignation followed a fair first round;\nno bettor is linked to a player."
	r := a.decideReview(t, admin, h.game, "void", reason)
	if r.Code != 200 {
		t.Fatalf("void: %d %s", r.Code, r.Body)
	}
	if got := r.json(t)["decisionReason"]; got != reason {
		t.Errorf("the review's decisionReason: %v, want %q", got, reason)
	}
	var log []struct {
		Action, Target string
		Data           struct{ DecisionReason string }
	}
	a.getJSON(t, admin, "/admin/audit", &log)
	if len(log) == 0 || log[0].Action != "integrity.void" || log[0].Target != "game:"+h.game || log[0].Data.DecisionReason != reason {
		t.Errorf("the audit log's newest entry: %+v, want the void with its reason %q", log, reason)
	}
	a.wantBetsSettled(t, h.game)
}

// The second hole the outside review found: a 0.01 USDC tip between a
// bettor and a player held the game, and the case showed the link but
// not what made it, when, or by whom. Each link of the case carries its
// evidence (the JSON) and says it in a sentence (the page).
func TestTheCaseShowsWhatMadeEachLinkWhenAndByWhom(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)
	h := a.holdAGame(t, resign(a, t))
	before := time.Now().Add(-time.Second)
	a.fund(t, h.s2, 100_000)
	if r, _ := a.tip(t, h.s2, map[string]any{"toUserId": h.p1.id, "amountMinor": 10_000}); r.Code != 200 {
		t.Fatalf("tip: %d %s", r.Code, r.Body)
	}
	a.fund(t, h.p1, 100_000)
	prep := a.prepare(t, h.p1.auth, h.s1.address(), 50_000)
	if r := a.submit(t, h.p1.auth, prep["intentId"].(string), signPrepared(t, h.p1.wallet, prep["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("transfer: %d %s", r.Code, r.Body)
	}
	after := time.Now().Add(time.Second)

	type ref struct{ UserID, Username string }
	type evidence struct {
		Kind        string
		At          time.Time
		By, To      ref
		AmountMinor *int64
	}
	var queue []struct {
		GameID string
		Links  []struct {
			UserID, PlayerID string
			Evidence         []evidence
		}
	}
	a.getJSON(t, admin, "/admin/integrity", &queue)
	if len(queue) != 1 {
		t.Fatalf("queue: %+v", queue)
	}
	names := map[string]string{}
	for _, p := range []player{h.p1, h.s1, h.s2} {
		names[p.id] = a.usernameOf(t, p)
	}
	want := map[string]struct {
		kind     string
		by, to   string
		amount   int64
		sentence string
	}{
		h.s2.id: {"tip", h.s2.id, h.p1.id, 10_000, names[h.s2.id] + " tipped " + names[h.p1.id] + " 0.01 USDC on "},
		h.s1.id: {"transfer", h.p1.id, h.s1.id, 50_000, names[h.p1.id] + " sent " + names[h.s1.id] + " 0.05 USDC on "},
	}
	var sentences []string
	for _, l := range queue[0].Links {
		w, ok := want[l.UserID]
		if !ok || l.PlayerID != h.p1.id || len(l.Evidence) != 1 {
			t.Errorf("link %+v, want one piece of evidence of a link to %s", l, h.p1.id)
			continue
		}
		e := l.Evidence[0]
		if e.Kind != w.kind || e.By.UserID != w.by || e.By.Username != names[w.by] || e.To.UserID != w.to ||
			e.AmountMinor == nil || *e.AmountMinor != w.amount || e.At.Before(before) || e.At.After(after) || e.At.Location() != time.UTC {
			t.Errorf("the evidence of %s's link: %+v, want a %s by %s to %s of %d between %s and %s (UTC)", l.UserID, e, w.kind, w.by, w.to, w.amount, before, after)
		}
		sentences = append(sentences, w.sentence+views.DateTime(e.At))
		delete(want, l.UserID)
	}
	if len(want) != 0 {
		t.Errorf("links missing from the case: %+v", want)
	}
	page := visibleText(a.do(t, request{path: "/admin/integrity/page", header: map[string]string{"Cookie": a.sessionCookie(t, adminWallet)}}).Body.String())
	for _, s := range sentences {
		if !strings.Contains(page, s) {
			t.Errorf("the case page does not say %q:\n%s", s, page)
		}
	}
}
