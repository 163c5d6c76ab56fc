package handlers

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/uptrace/bun"

	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
)

var noWorkers = map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret}

// depositor signs in a wallet with usdc on chain and deposits all of it.
func (a *App) depositor(t testing.TB, usdc int64) player {
	t.Helper()
	w, auth := a.funded(t, usdc)
	p := a.prepare(t, auth, a.depositAddress(t, auth), usdc)
	if r := a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}
	return player{wallet: w, id: a.do(t, request{path: "/users/me", header: auth}).json(t)["id"].(string), auth: auth}
}

// spectatorWith signs in a wallet holding usdc on chain (not deposited).
func (a *App) spectatorWith(t testing.TB, usdc int64) player {
	t.Helper()
	w, auth := a.funded(t, usdc)
	return player{wallet: w, id: a.do(t, request{path: "/users/me", header: auth}).json(t)["id"].(string), auth: auth}
}

func (a *App) donate(t testing.TB, p player, game string, amount int64) (response, string) {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/prepare", header: p.auth,
		body: jsonBody(map[string]any{"amountMinor": amount})})
	if r.Code != 200 {
		return r, ""
	}
	prep := r.json(t)
	signed := signPrepared(t, p.wallet, prep["transaction"].(string), nil)
	body := jsonBody(map[string]string{"intentId": prep["intentId"].(string), "signedTransaction": signed})
	return a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/submit", header: p.auth, body: body}), body
}

// stakedGame matches two depositors in a 1-round rps game with a stake.
func (a *App) stakedGame(t testing.TB, stake int64, settings string) (player, player, string) {
	t.Helper()
	var p1, p2 player
	if stake > 0 {
		p1, p2 = a.depositor(t, stake), a.depositor(t, stake)
	} else {
		p1, p2 = a.newPlayer(t), a.newPlayer(t)
	}
	lobby := a.lobby(t, p1, jsonBody(map[string]any{"gameType": "rps", "stakeMinor": stake}))
	if settings != "" {
		lobby = a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": `+jsonBody(stake)+`, "settings": `+settings+`}`)
	}
	a.join(t, p1, lobby)
	return p1, p2, a.join(t, p2, lobby)["gameId"].(string)
}

func (a *App) ledger(t testing.TB, account string) int64 {
	t.Helper()
	n, err := money.BalanceOf(context.Background(), a.DB, account)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (a *App) onChain(t testing.TB, owner solana.PublicKey) int64 {
	t.Helper()
	n, err := a.Money.Chain().TokenBalance(context.Background(), owner, a.Money.Mint())
	if err != nil {
		t.Fatal(err)
	}
	return int64(n)
}

func TestPayoutExample(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 1}`)
	s1, s2 := a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 1_000_000)
	treasury := a.ledger(t, money.Treasury)
	for _, d := range []struct {
		who    player
		amount int64
	}{{s1, 250_000}, {s2, 333_333}} {
		if r, _ := a.donate(t, d.who, game, d.amount); r.Code != 200 || r.json(t)["escrowAddress"] == nil {
			t.Fatalf("donation: %d %s", r.Code, r.Body)
		}
	}
	pot := a.do(t, request{path: "/games/" + game + "/pot"}).json(t)
	if pot["playerPotMinor"] != float64(2_000_000) || pot["spectatorPotMinor"] != float64(583_333) ||
		pot["totalMinor"] != float64(2_583_333) || pot["winnerGetsMinor"] != float64(2_557_500) {
		t.Fatalf("pot before the end: %v", pot)
	}
	// The donations list pages newest first.
	page := func(query string) []map[string]any {
		var ds []map[string]any
		r := a.do(t, request{path: "/games/" + game + "/donations" + query})
		if err := jsonDecode(r.Body.Bytes(), &ds); err != nil || r.Code != 200 {
			t.Fatalf("donations%s: %d %s", query, r.Code, r.Body)
		}
		return ds
	}
	newest := page("?limit=1")
	if len(newest) != 1 || newest[0]["amountMinor"] != float64(333_333) {
		t.Fatalf("first page: %v", newest)
	}
	older := page("?limit=1&before=" + newest[0]["signature"].(string))
	if len(older) != 1 || older[0]["amountMinor"] != float64(250_000) || len(page("?before="+older[0]["signature"].(string))) != 0 {
		t.Fatalf("next pages: %v", older)
	}
	a.do(t, request{path: "/games/" + game + "/donations?before=nope"}).wantError(t, 400, "VALIDATION_ERROR")
	a.do(t, request{path: "/games/" + game + "/donations?limit=0"}).wantError(t, 400, "VALIDATION_ERROR")

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	if _, err := a.Pot.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}

	evs, err := a.Games.Events(context.Background(), game, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var completed string
	for _, ev := range evs {
		if ev.Name == "game:completed" {
			completed = string(ev.Data)
		}
	}
	for _, want := range []string{`"winnerId": "` + p1.id + `"`, `"potMinor": 2583333`, `"spectatorPotMinor": 583333`,
		`"feeMinor": 25833`, `"payoutMinor": 2557500`} {
		if !strings.Contains(completed, want) {
			t.Errorf("game:completed %s lacks %s", completed, want)
		}
	}
	if b := a.balances(t, p1.auth); b.available != 2_557_500 || b.locked != 0 {
		t.Errorf("winner: %+v, want +2557500 available (they had staked their 1000000)", b)
	}
	if b := a.balances(t, p2.auth); b.available != 0 || b.locked != 0 {
		t.Errorf("loser: %+v, want their 1000000 gone", b)
	}
	if got := a.ledger(t, money.Treasury) - treasury; got != 25_833 {
		t.Errorf("treasury: +%d, want +25833", got)
	}
	escrow := a.Pot.EscrowAddress(game)
	if got := a.onChain(t, escrow); got != 0 {
		t.Errorf("escrow after the sweep holds %d on chain, want 0", got)
	}
	rec, err := a.Money.Reconcile(context.Background())
	if err != nil || !rec.Balanced {
		t.Fatalf("books after settlement: %+v %v", rec, err)
	}
	// The game's public data names the escrow and the sweep's signature.
	detail := a.do(t, request{path: "/games/" + game}).json(t)
	settlement := detail["settlement"].([]any)
	if detail["escrowAddress"] != escrow.String() || len(settlement) != 1 ||
		settlement[0].(map[string]any)["signature"] == nil || settlement[0].(map[string]any)["status"] != "confirmed" {
		t.Fatalf("public game data: escrow %v settlement %v", detail["escrowAddress"], settlement)
	}
}

func TestSettlementOnceAcrossInstancesAndCrashes(t *testing.T) {
	one, two := newTestApp(t, noWorkers), newTestApp(t, noWorkers)
	p1, _, gameID := one.stakedGame(t, 500_000, `{"rounds": 1, "roundSeconds": 3}`)
	spectator := one.spectatorWith(t, 1_000_000)
	if r, _ := one.donate(t, spectator, gameID, 400_000); r.Code != 200 {
		t.Fatalf("donation: %d %s", r.Code, r.Body)
	}
	one.act(t, p1, gameID, `{"type": "move", "move": "paper"}`)
	waitFor(t, func() bool { // the round's deadline passes
		st := one.do(t, request{path: "/games/" + gameID + "/state", header: p1.auth}).json(t)
		timer, _ := st["timer"].(map[string]any)
		return timer != nil && timer["remainingMs"] == float64(0)
	})
	// Both instances claim the expired deadline at once: one settles.
	var wg sync.WaitGroup
	for _, a := range []*App{one, two} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Games.ExpireDue(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	winner := one.balances(t, p1.auth).available
	if winner != 1_386_000 {
		t.Fatalf("winner after a concurrent settlement: %d, want 1386000 (1400000 less the 1%% fee)", winner)
	}
	// The process "crashed" after the ledger write: the sweep is pending.
	transfers, err := one.Pot.Transfers(context.Background(), gameID)
	if err != nil || len(transfers) != 1 || transfers[0].Status != "pending" {
		t.Fatalf("after the ledger write: %+v %v", transfers, err)
	}
	// Settling again (a retry by another instance) pays nothing more.
	g, err := two.Games.Metadata(context.Background(), gameID)
	if err != nil {
		t.Fatal(err)
	}
	var row game.Game
	if err := two.DB.NewSelect().Model(&row).Where("id = ?", gameID).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = two.DB.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := two.Pot.Settle(ctx, tx, row, []string{g.Players[0].UserID, g.Players[1].UserID},
			rules.Outcome{Done: true, Winner: p1.id, Reason: "timeout"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := one.balances(t, p1.auth).available; got != winner {
		t.Fatalf("a second settlement paid again: %d, want %d", got, winner)
	}

	// Both instances now resume the work: the sweep happens and is recorded once.
	for _, a := range []*App{one, two} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Pot.ProcessTransfers(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	transfers, _ = one.Pot.Transfers(context.Background(), gameID)
	if len(transfers) != 1 || transfers[0].Status != "confirmed" || transfers[0].Signature == nil {
		t.Fatalf("after recovery: %+v", transfers)
	}
	if got := one.onChain(t, one.Pot.EscrowAddress(gameID)); got != 0 {
		t.Errorf("escrow holds %d after the sweep", got)
	}
	rec, err := one.Money.Reconcile(context.Background())
	if err != nil || !rec.Balanced {
		t.Fatalf("books: %+v %v", rec, err)
	}
}

func TestDonationRules(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 0, `{"rounds": 1}`)
	spectator := a.spectatorWith(t, 2_000_000)

	r, _ := a.donate(t, p1, game, 50_000)
	r.wantError(t, 403, "FORBIDDEN")
	r, _ = a.donate(t, spectator, game, 9_999)
	r.wantError(t, 400, "VALIDATION_ERROR")
	r, _ = a.donate(t, spectator, "00000000-0000-0000-0000-000000000000", 50_000)
	r.wantError(t, 404, "NOT_FOUND")

	r, body := a.donate(t, spectator, game, 50_000)
	if r.Code != 200 {
		t.Fatalf("donation: %d %s", r.Code, r.Body)
	}
	sig := r.json(t)["signature"].(string)
	again := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/submit", header: spectator.auth, body: body})
	if again.Code != 200 || again.json(t)["signature"] != sig {
		t.Fatalf("the same intent again: %d %s", again.Code, again.Body)
	}
	if got := a.onChain(t, spectator.wallet.key.PublicKey()); got != 1_950_000 {
		t.Errorf("donor's wallet: %d, want 1950000 (one donation)", got)
	}
	// Exactly one announcement and one donation event.
	evs, _ := a.Games.Events(context.Background(), game, 0, 100)
	count := map[string]int{}
	for _, ev := range evs {
		count[ev.Name]++
		if ev.Name == "game:chat:message" && !strings.Contains(string(ev.Data), "donated 0.05 USDC to the game") {
			t.Errorf("announcement: %s", ev.Data)
		}
	}
	if count["game:donation"] != 1 || count["game:pot"] != 1 || count["game:chat:message"] != 1 {
		t.Errorf("events: %v, want one donation, one pot and one chat message", count)
	}

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "paper"}`)
	r, _ = a.donate(t, spectator, game, 50_000)
	r.wantError(t, 409, "GAME_NOT_ACTIVE")
}

func TestCancelledGameRefundsDonationsOnChain(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 300_000, `{"rounds": 3, "roundSeconds": 3}`)
	spectator := a.spectatorWith(t, 1_000_000)
	if r, _ := a.donate(t, spectator, game, 120_000); r.Code != 200 {
		t.Fatalf("donation: %d %s", r.Code, r.Body)
	}
	// Nobody moves: the round times out for both and the game is abandoned.
	waitFor(t, func() bool {
		n, err := a.Games.ExpireDue(context.Background())
		return err == nil && n > 0
	})
	if _, err := a.Pot.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if meta := a.do(t, request{path: "/games/" + game}).json(t); meta["status"] != "cancelled" {
		t.Fatalf("abandoned game: %v", meta["status"])
	}
	for _, p := range []player{p1, p2} {
		if b := a.balances(t, p.auth); b.available != 300_000 || b.locked != 0 {
			t.Errorf("player after a cancelled game: %+v, want the stake back", b)
		}
	}
	if got := a.onChain(t, spectator.wallet.key.PublicKey()); got != 1_000_000 {
		t.Errorf("donor's wallet after the refund: %d, want 1000000", got)
	}
	if got := a.onChain(t, a.Pot.EscrowAddress(game)); got != 0 {
		t.Errorf("escrow after refunds: %d", got)
	}
	transfers, _ := a.Pot.Transfers(context.Background(), game)
	if len(transfers) != 1 || transfers[0].Kind != "refund" || transfers[0].Status != "confirmed" {
		t.Errorf("refund transfers: %+v", transfers)
	}
}

func TestDonationLandingAfterTheGameEndedIsRefundedNotPotted(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 200_000, `{"rounds": 1}`)
	spectator := a.spectatorWith(t, 1_000_000)
	// Prepared and signed while the game is active, submitted after it ended.
	prep := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/prepare", header: spectator.auth,
		body: jsonBody(map[string]any{"amountMinor": 70_000})}).json(t)
	signed := signPrepared(t, spectator.wallet, prep["transaction"].(string), nil)
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	before := a.do(t, request{path: "/games/" + game + "/pot"}).json(t)

	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/submit", header: spectator.auth,
		body: jsonBody(map[string]string{"intentId": prep["intentId"].(string), "signedTransaction": signed})})
	if r.Code != 200 || r.json(t)["refunded"] != true {
		t.Fatalf("late donation: %d %s, want 200 with refunded: true", r.Code, r.Body)
	}
	after := a.do(t, request{path: "/games/" + game + "/pot"}).json(t)
	for _, k := range []string{"spectatorPotMinor", "totalMinor", "winnerGetsMinor"} {
		if after[k] != before[k] {
			t.Errorf("pot %s changed from %v to %v after the game ended", k, before[k], after[k])
		}
	}
	if after["winnerGetsMinor"] != float64(396_000) {
		t.Errorf("winner gets %v, want 396000 (400000 minus the 1%% fee)", after["winnerGetsMinor"])
	}
	var list []map[string]any
	if err := jsonDecode(a.do(t, request{path: "/games/" + game + "/donations"}).Body.Bytes(), &list); err != nil ||
		len(list) != 1 || list[0]["refunded"] != true {
		t.Errorf("donations list: %v (%v), want the late donation marked refunded", list, err)
	}
	if _, err := a.Pot.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := a.onChain(t, spectator.wallet.key.PublicKey()); got != 1_000_000 {
		t.Errorf("donor's wallet after the refund: %d, want 1000000", got)
	}
}

// waitFor polls cond until it holds, for at most 10 seconds.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10 seconds")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
