package handlers_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/chain/localchain"
	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/settlement"
)

var noWorkers = map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret}

// depositor signs in a wallet with usdc on chain and deposits all of it.
func (a *testApp) depositor(t testing.TB, usdc int64) player {
	t.Helper()
	w, auth := a.funded(t, usdc)
	p := a.prepare(t, auth, a.depositAddress(t, auth), usdc)
	if r := a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}
	return player{wallet: w, id: a.do(t, request{path: "/users/me", header: auth}).json(t)["id"].(string), auth: auth}
}

// spectatorWith signs in a wallet holding usdc on chain (not deposited).
func (a *testApp) spectatorWith(t testing.TB, usdc int64) player {
	t.Helper()
	w, auth := a.funded(t, usdc)
	return player{wallet: w, id: a.do(t, request{path: "/users/me", header: auth}).json(t)["id"].(string), auth: auth}
}

func (a *testApp) donate(t testing.TB, p player, game string, amount int64) (response, string) {
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
func (a *testApp) stakedGame(t testing.TB, stake int64, settings string) (player, player, string) {
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

func (a *testApp) ledger(t testing.TB, account string) int64 {
	t.Helper()
	n, err := money.BalanceOf(context.Background(), a.DB, account)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (a *testApp) onChain(t testing.TB, owner solana.PublicKey) int64 {
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
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}

	evs, err := a.Events.Events(context.Background(), domain.GameStreamOf(game), 0, 100)
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
	escrow := a.Settlement.EscrowAddress(game)
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
	for _, d := range page("") {
		if d["refunded"] != false {
			t.Errorf("a won game's donation %v is marked refunded", d)
		}
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
		if timer == nil || timer["remainingMs"] != float64(0) {
			return false
		}
		// remainingMs is 0 in the deadline's last millisecond too, when
		// there is nothing to claim yet.
		deadline, err := time.Parse(time.RFC3339Nano, timer["deadline"].(string))
		return err == nil && time.Now().After(deadline)
	})
	// Both instances claim the expired deadline at once: one settles.
	var wg sync.WaitGroup
	for _, a := range []*testApp{one, two} {
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
	transfers, err := one.Settlement.Transfers(context.Background(), gameID)
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
	err = db.Transact(context.Background(), two.DB, func(ctx context.Context, tx db.Tx) error {
		var reads db.Reads
		pay := two.Settlement.StartSettle(tx, row, []string{g.Players[0].UserID, g.Players[1].UserID},
			rules.Outcome{Done: true, Winner: p1.id, Reason: "timeout"}, &reads)
		if err := reads.Run(ctx, tx); err != nil {
			return err
		}
		_, err := pay(ctx, "")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := one.balances(t, p1.auth).available; got != winner {
		t.Fatalf("a second settlement paid again: %d, want %d", got, winner)
	}

	// Both instances now resume the work: the sweep happens and is recorded once.
	for _, a := range []*testApp{one, two} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	transfers, _ = one.Settlement.Transfers(context.Background(), gameID)
	if len(transfers) != 1 || transfers[0].Status != "confirmed" || transfers[0].Signature == nil {
		t.Fatalf("after recovery: %+v", transfers)
	}
	if got := one.onChain(t, one.Settlement.EscrowAddress(gameID)); got != 0 {
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
	evs, _ := a.Events.Events(context.Background(), domain.GameStreamOf(game), 0, 100)
	count := map[domain.EventName]int{}
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
	// Nobody moves: the round times out for both and the game is abandoned
	// (ExpireDue may first claim other tests' deadlines).
	waitFor(t, func() bool {
		if _, err := a.Games.ExpireDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		return a.do(t, request{path: "/games/" + game}).json(t)["status"] == "cancelled"
	})
	platformSOL := a.lamports(t, a.Keys.FeePayer().PublicKey())
	n, err := a.Settlement.ProcessTransfers(context.Background())
	if err != nil || n == 0 {
		t.Fatalf("process transfers: %d %v", n, err)
	}
	// The donor's token account exists: the refund does not open one, and
	// the fee payer pays the transactions' fees at most (n counts what
	// other tests of the package left pending too; a transfer that empties
	// its escrow closes its account and gives the rent back).
	if paid := platformSOL - a.lamports(t, a.Keys.FeePayer().PublicKey()); paid > settlementFees(int64(n)) {
		t.Errorf("the fee payer paid %d lamports for %d transfers, want at most their fees %d (no rent)", paid, n, settlementFees(int64(n)))
	}
	for _, p := range []player{p1, p2} {
		if b := a.balances(t, p.auth); b.available != 300_000 || b.locked != 0 {
			t.Errorf("player after a cancelled game: %+v, want the stake back", b)
		}
	}
	if got := a.onChain(t, spectator.wallet.key.PublicKey()); got != 1_000_000 {
		t.Errorf("donor's wallet after the refund: %d, want 1000000", got)
	}
	if got := a.onChain(t, a.Settlement.EscrowAddress(game)); got != 0 {
		t.Errorf("escrow after refunds: %d", got)
	}
	transfers, _ := a.Settlement.Transfers(context.Background(), game)
	if len(transfers) != 1 || transfers[0].Kind != "refund" || transfers[0].Status != "confirmed" {
		t.Errorf("refund transfers: %+v", transfers)
	}
	var list []map[string]any
	if err := jsonDecode(a.do(t, request{path: "/games/" + game + "/donations"}).Body.Bytes(), &list); err != nil ||
		len(list) != 1 || list[0]["refunded"] != true {
		t.Errorf("donations list of the cancelled game: %v (%v), want the donation marked refunded", list, err)
	}
}

func TestGameIDsInAnySpellingNameTheSameGame(t *testing.T) {
	a := newTestApp(t, noWorkers)
	_, _, game := a.stakedGame(t, 0, `{"rounds": 1}`)
	spectator := a.spectatorWith(t, 1_000_000)
	want := a.do(t, request{path: "/games/" + game + "/pot"}).Body.String()
	for _, spelling := range []string{strings.ToUpper(game), "urn:uuid:" + game, "{" + game + "}"} {
		if r := a.do(t, request{path: "/games/" + spelling + "/pot"}); r.Code != 200 || r.Body.String() != want {
			t.Errorf("pot of %s: %d %s, want %s", spelling, r.Code, r.Body, want)
		}
		if r := a.do(t, request{path: "/games/" + spelling + "/events", header: spectator.auth}); r.Code != 200 {
			t.Errorf("events of %s: %d %s", spelling, r.Code, r.Body)
		}
	}
	// A donation through another spelling goes to the game's one escrow.
	r, _ := a.donate(t, spectator, strings.ToUpper(game), 20_000)
	if r.Code != 200 || r.json(t)["escrowAddress"] != a.Settlement.EscrowAddress(game).String() {
		t.Fatalf("donation through the upper-case id: %d %s, want escrow %s", r.Code, r.Body, a.Settlement.EscrowAddress(game))
	}
	if got := a.onChain(t, a.Settlement.EscrowAddress(game)); got != 20_000 {
		t.Errorf("the game's escrow holds %d, want 20000", got)
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
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := a.onChain(t, spectator.wallet.key.PublicKey()); got != 1_000_000 {
		t.Errorf("donor's wallet after the refund: %d, want 1000000", got)
	}
}

// settlementFees is the most the fee payer pays for n settlement transfers
// (two signatures each, at most the default compute budget, the embedded
// chain's prices staying at the floor here): fees, no rent.
func settlementFees(n int64) int64 {
	return n * (2*localchain.FeePerSignature + chain.DefaultBudget.PriorityFee())
}

// confirmedTransferFee is the fee of game's confirmed settlement transfer as
// the fee payer's budget counts it (chain.FeeOf of its bytes), checked
// against what the embedded chain charged.
func (a *testApp) confirmedTransferFee(t testing.TB, game string) int64 {
	t.Helper()
	var raw []byte
	var sig string
	if err := a.DB.QueryRowContext(context.Background(), "SELECT raw, signature FROM settlement_transfers WHERE game_id = ? AND status = 'confirmed'",
		game).Scan(&raw, &sig); err != nil {
		t.Fatal(err)
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	var charged int64
	if err := a.DB.QueryRowContext(context.Background(), "SELECT fee FROM localchain.transactions WHERE signature = ?", sig).Scan(&charged); err != nil {
		t.Fatal(err)
	}
	if fee := chain.FeeOf(tx); fee != charged {
		t.Errorf("the budget counts %d lamports for transfer %s, the chain charged %d", fee, sig, charged)
	}
	return charged
}

// transferList describes settlement transfers for a test's message.
func transferList(ts []settlement.Transfer) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "[%s of %d to %s: %s %q] ", t.Kind, t.AmountMinor, t.ToAddress, t.Status, t.Error)
	}
	return b.String()
}

// lateDonation has a spectator holding exactly amount sign a donation of
// all of it while the game is active and submit it after the game ended,
// so that it is refunded and the donor's token account is left empty.
func (a *testApp) lateDonation(t *testing.T, amount int64) (player, string) {
	t.Helper()
	// What other tests of the package left pending goes first.
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	p1, p2, game := a.stakedGame(t, 200_000, `{"rounds": 1}`)
	spectator := a.spectatorWith(t, amount)
	prep := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/prepare", header: spectator.auth,
		body: jsonBody(map[string]any{"amountMinor": amount})}).json(t)
	signed := signPrepared(t, spectator.wallet, prep["transaction"].(string), nil)
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/submit", header: spectator.auth,
		body: jsonBody(map[string]string{"intentId": prep["intentId"].(string), "signedTransaction": signed})})
	if r.Code != 200 || r.json(t)["refunded"] != true {
		t.Fatalf("late donation: %d %s, want 200 with refunded: true", r.Code, r.Body)
	}
	return spectator, game
}

// transfersComeDue makes the game's settlement transfers due now, as the
// passing of their wait would.
func (a *testApp) transfersComeDue(t testing.TB, game string) {
	t.Helper()
	if _, err := a.DB.ExecContext(context.Background(),
		"UPDATE settlement_transfers SET updated_at = now() - interval '1 second' WHERE game_id = ?", game); err != nil {
		t.Fatal(err)
	}
}

// wantRefundWaiting checks that the game's one settlement transfer, the
// refund of amount to the donor's wallet, waits for the wallet's USDC
// account: not sent, not credited to the donor's platform balance, its
// USDC still in the escrow, and the books balanced.
func (a *testApp) wantRefundWaiting(t *testing.T, donor player, game string, amount int64) {
	t.Helper()
	ctx := context.Background()
	if b := a.balances(t, donor.auth); b.available != 0 || b.onChain != 0 {
		t.Fatalf("donor while the refund waits: %+v, want nothing on the platform balance and nothing on chain", b)
	}
	transfers, err := a.Settlement.Transfers(ctx, game)
	if err != nil || len(transfers) != 1 {
		t.Fatalf("settlement transfers: %s %v", transferList(transfers), err)
	}
	tr := transfers[0]
	if tr.Kind != settlement.KindRefund || tr.Status != "pending" || tr.Signature != nil || tr.ToAddress != donor.wallet.address() ||
		tr.AmountMinor != amount || !strings.Contains(tr.Error, "no USDC token account") {
		t.Fatalf("refund: %s, want a pending refund of %d to the donor's wallet, waiting for its token account", transferList(transfers), amount)
	}
	if open, err := a.Money.Chain().AccountExists(ctx, chain.ATA(donor.wallet.key.PublicKey(), a.Money.Mint())); err != nil || open {
		t.Errorf("the donor's token account exists while the refund waits (%v): the platform opened it", err)
	}
	if c, l := a.onChain(t, a.Settlement.EscrowAddress(game)), a.ledger(t, money.Escrow(game)); c != amount || l != -amount {
		t.Errorf("escrow while the refund waits: %d on chain, %d in the ledger, want %d and -%d", c, l, amount, amount)
	}
	if rec, err := a.Money.Reconcile(ctx); err != nil || !rec.Balanced {
		t.Fatalf("books while the refund waits: %+v %v", rec, err)
	}
}

// wantRefundedToWallet checks that the game's one settlement transfer
// refunded amount to the donor's wallet: the escrow is empty, the donor's
// platform balance untouched, their history shows the refund, and the
// game's public data and page say where the money went.
func (a *testApp) wantRefundedToWallet(t *testing.T, donor player, game string, amount int64) {
	t.Helper()
	ctx := context.Background()
	transfers, err := a.Settlement.Transfers(ctx, game)
	if err != nil || len(transfers) != 1 {
		t.Fatalf("settlement transfers: %s %v", transferList(transfers), err)
	}
	tr := transfers[0]
	if tr.Kind != settlement.KindRefund || tr.Status != "confirmed" || tr.Signature == nil ||
		tr.ToAddress != donor.wallet.address() || tr.AmountMinor != amount {
		t.Fatalf("refund: %s, want a confirmed refund of %d to the donor's wallet", transferList(transfers), amount)
	}
	if b := a.balances(t, donor.auth); b.available != 0 || b.onChain != amount {
		t.Errorf("donor after the refund: %+v, want %d back in the wallet and nothing on the platform balance", b, amount)
	}
	if got := a.onChain(t, a.Settlement.EscrowAddress(game)); got != 0 {
		t.Errorf("escrow after the refund: %d on chain, want 0", got)
	}
	if got := a.ledger(t, money.Escrow(game)); got != 0 {
		t.Errorf("escrow after the refund: %d in the ledger, want 0", got)
	}
	rec, err := a.Money.Reconcile(ctx)
	if err != nil || !rec.Balanced {
		t.Fatalf("books after the refund: %+v %v", rec, err)
	}
	var items []money.Activity
	if err := jsonDecode(a.do(t, request{path: "/wallets/me/transactions", header: donor.auth}).Body.Bytes(), &items); err != nil ||
		len(items) == 0 || items[0].Kind != "donation refund" || items[0].AmountMinor != amount ||
		items[0].Signature != *tr.Signature || items[0].Counterparty != "game "+game {
		t.Errorf("donor's history: %+v (%v), want a donation refund of %d with the transfer's signature", items, err, amount)
	}
	detail := a.do(t, request{path: "/games/" + game}).json(t)
	if s, _ := detail["settlement"].([]any); len(s) != 1 || s[0].(map[string]any)["kind"] != settlement.KindRefund ||
		s[0].(map[string]any)["signature"] != *tr.Signature {
		t.Errorf("public settlement: %v", detail["settlement"])
	}
	html := a.do(t, request{path: "/game/" + game}).Body.String()
	if !strings.Contains(html, "USDC to the wallet that paid it") || !strings.Contains(html, *tr.Signature) {
		t.Errorf("the game page does not say the refund went to the paying wallet: %.2000s", html)
	}
}

// The rent-farming loop, and a deposit past the limit: a donor signs a
// small donation, lands it after the game ended (or in a game that is
// cancelled), closes the emptied token account to collect its rent, and
// waits for the refund to reopen it at the platform's cost, or to be
// credited to their platform balance, which no deposit limit would weigh.
// Neither happens: the refund waits, retried, until the donor's wallet
// has the account again, and then goes there.
func TestARefundToAClosedTokenAccountWaitsForTheAccount(t *testing.T) {
	a := newTestApp(t, noWorkers)
	ctx := context.Background()
	donor, game := a.lateDonation(t, 10_000)
	a.closeTokenAccount(t, donor.wallet)
	platformSOL := a.lamports(t, a.Keys.FeePayer().PublicKey())
	for try := range 2 {
		if try > 0 {
			a.transfersComeDue(t, game)
		}
		n, err := a.Settlement.ProcessTransfers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a.wantRefundWaiting(t, donor, game, 10_000)
		if n != 0 {
			t.Fatalf("process transfers confirmed %d, want the refund waiting", n)
		}
	}
	if paid := platformSOL - a.lamports(t, a.Keys.FeePayer().PublicKey()); paid != 0 {
		t.Errorf("the fee payer paid %d lamports while the refund waits, want 0", paid)
	}

	a.openTokenAccount(t, donor.wallet)
	a.transfersComeDue(t, game)
	if n, err := a.Settlement.ProcessTransfers(ctx); err != nil || n != 1 {
		t.Fatalf("process transfers: %d %v, want the refund confirmed", n, err)
	}
	// The refund empties the escrow and closes its account: the fee payer
	// pays the fee and gets back the rent it paid when the donation opened
	// the account.
	if paid, fee := platformSOL-a.lamports(t, a.Keys.FeePayer().PublicKey()), a.confirmedTransferFee(t, game); paid != fee-chain.TokenAccountRent {
		t.Errorf("the fee payer paid %d lamports, want the fee %d less the escrow's rent back", paid, fee)
	}
	a.wantRefundedToWallet(t, donor, game, 10_000)
}

// beforeSend is a chain transport that runs hook once, just before the
// first sent transaction that signer signs.
type beforeSend struct {
	next   localchain.Transport
	signer solana.PublicKey
	armed  atomic.Bool
	hook   func()
}

// rpcRequest is what a test's chain transport reads of a JSON-RPC call.
type rpcRequest struct {
	ID     json.RawMessage
	Method string
	Params []json.RawMessage
}

// readRPC reads req's JSON-RPC call and leaves its body to be read again.
func readRPC(req *http.Request) (rpcRequest, error) {
	var call rpcRequest
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return call, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	json.Unmarshal(body, &call) // not a call: an empty method
	return call, nil
}

func (b *beforeSend) Do(req *http.Request) (*http.Response, error) {
	call, err := readRPC(req)
	if err != nil {
		return nil, err
	}
	if call.Method == "sendTransaction" && len(call.Params) > 0 {
		var b64 string
		json.Unmarshal(call.Params[0], &b64)
		raw, _ := base64.StdEncoding.DecodeString(b64)
		if tx, err := solana.TransactionFromBytes(raw); err == nil {
			if _, signs := chain.SignatureOf(tx, b.signer); signs && b.armed.CompareAndSwap(true, false) {
				b.hook() // its own transactions pass: it is disarmed
			}
		}
	}
	return b.next.Do(req)
}

func (b *beforeSend) CloseIdleConnections() {}

// A donor who closes their token account after the refund to it was signed
// (without opening the account, the transfer cannot land) does not get the
// refund on their platform balance: once that transaction's blockhash has
// expired the refund waits for the account, is never sent forever, and no
// rent is paid; it goes to the wallet once the account is back.
func TestARefundSignedBeforeTheDonorClosedTheAccountWaitsForIt(t *testing.T) {
	a := newTestApp(t, noWorkers)
	ctx := context.Background()
	donor, game := a.lateDonation(t, 30_000)
	client := a.Money.Chain()
	saved := *client
	t.Cleanup(func() { *client = saved })
	hook := &beforeSend{next: localchain.Transport{Chain: a.LocalChain}, signer: a.Settlement.EscrowAddress(game),
		hook: func() { a.closeTokenAccount(t, donor.wallet) }}
	hook.armed.Store(true)
	*client = *chain.NewClient("http://embedded-chain", hook)

	platformSOL := a.lamports(t, a.Keys.FeePayer().PublicKey())
	confirmed, err := a.Settlement.ProcessTransfers(ctx)
	if err != nil || confirmed != 0 {
		t.Fatalf("process transfers: %d %v, want the refund not confirmed", confirmed, err)
	}
	transfers, _ := a.Settlement.Transfers(ctx, game)
	if len(transfers) != 1 || transfers[0].Kind != settlement.KindRefund || transfers[0].ToAddress != donor.wallet.address() ||
		transfers[0].Status != "sent" || hook.armed.Load() {
		t.Fatalf("refund signed to the wallet, whose account was then closed: %s", transferList(transfers))
	}
	// Retried while its blockhash is valid; once it expired, the refund is
	// not signed anew while the account is missing.
	for round := 0; ; round++ {
		if round == 5 {
			t.Fatalf("the refund does not wait for the account after %d rounds: %s", round, transferList(transfers))
		}
		var raw []byte
		if err := a.DB.QueryRowContext(ctx, "SELECT coalesce(raw, '') FROM settlement_transfers WHERE game_id = ?", game).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if len(raw) > 0 && round > 0 { // the chain moves on: the blockhash expires
			tx, err := solana.TransactionFromBytes(raw)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.DB.ExecContext(ctx, "UPDATE localchain.blockhashes SET created_at = now() - interval '10 minutes' WHERE hash = ?",
				tx.Message.RecentBlockhash.String()); err != nil {
				t.Fatal(err)
			}
			if _, err := a.DB.ExecContext(ctx, "UPDATE settlement_transfers SET last_valid_block_height = last_valid_block_height - 10000 WHERE game_id = ?",
				game); err != nil {
				t.Fatal(err)
			}
		}
		a.transfersComeDue(t, game)
		n, err := a.Settlement.ProcessTransfers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		confirmed += n
		if transfers, _ = a.Settlement.Transfers(ctx, game); len(transfers) != 1 || transfers[0].Status == "confirmed" {
			t.Fatalf("the refund without the account: %s, want it unconfirmed", transferList(transfers))
		}
		if transfers[0].Status == "pending" && strings.Contains(transfers[0].Error, "no USDC token account") {
			break
		}
	}
	a.wantRefundWaiting(t, donor, game, 30_000)

	a.openTokenAccount(t, donor.wallet)
	a.transfersComeDue(t, game)
	n, err := a.Settlement.ProcessTransfers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	confirmed += n
	// Refused sends cost nothing: the fee payer paid one transaction's fee,
	// and the refund, the escrow's last, gave back the account's rent.
	if paid, fee := platformSOL-a.lamports(t, a.Keys.FeePayer().PublicKey()), a.confirmedTransferFee(t, game); confirmed != 1 || paid != fee-chain.TokenAccountRent {
		t.Errorf("the fee payer paid %d lamports for %d transfers, want the fee %d less the escrow's rent back", paid, confirmed, fee)
	}
	a.wantRefundedToWallet(t, donor, game, 30_000)
}

// waitFor polls cond until it holds; only a condition that never holds
// (a minute) fails, however busy the machine.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// While the chain RPC hangs for 5 s on one settlement transfer, nothing
// waits for it: no transaction stays open, another game settles and a
// withdrawal completes; then the transfer confirms once.
func TestASettlementTransferHangingOnTheChainHoldsNothingUp(t *testing.T) {
	a := newTestApp(t, noWorkers)
	ctx := context.Background()
	if _, err := a.Settlement.ProcessTransfers(ctx); err != nil { // other tests' leftovers
		t.Fatal(err)
	}
	p1, p2, hanging := a.stakedGame(t, 100_000, `{"rounds": 1}`)
	if r, _ := a.donate(t, a.spectatorWith(t, 50_000), hanging, 50_000); r.Code != 200 {
		t.Fatalf("donate: %d %s", r.Code, r.Body)
	}
	a.act(t, p1, hanging, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, hanging, `{"type": "move", "move": "scissors"}`) // p1 wins: the donations are swept on chain

	client := a.Money.Chain()
	saved := *client
	t.Cleanup(func() { *client = saved })
	blocked, release := make(chan struct{}), make(chan struct{})
	hook := &beforeSend{next: localchain.Transport{Chain: a.LocalChain}, signer: a.Settlement.EscrowAddress(hanging),
		hook: func() { close(blocked); <-time.After(5 * time.Second); close(release) }}
	hook.armed.Store(true)
	*client = *chain.NewClient("http://embedded-chain", hook)
	processed := make(chan error, 1)
	go func() {
		n, err := a.Settlement.ProcessTransfers(ctx)
		if err == nil && n != 1 {
			err = fmt.Errorf("confirmed %d transfers, want the sweep", n)
		}
		processed <- err
	}()
	<-blocked

	var idle int
	if err := a.DB.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&idle); err != nil {
		t.Fatal(err)
	}
	if idle != 0 {
		t.Errorf("%d transactions stay open while the chain RPC hangs, want none", idle)
	}
	q1, q2, other := a.stakedGame(t, 100_000, `{"rounds": 1}`)
	a.act(t, q1, other, `{"type": "move", "move": "paper"}`)
	a.act(t, q2, other, `{"type": "move", "move": "rock"}`)
	if m, err := a.Games.Metadata(ctx, other); err != nil || m.Status != game.StatusCompleted || m.Result.PayoutMinor != 198_000 {
		t.Fatalf("another game while the transfer hangs: %+v %v, want it settled with a 198000 payout", m.Result, err)
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: q1.auth, body: `{"amountMinor": 150000}`}); r.Code != 200 {
		t.Fatalf("a withdrawal while the transfer hangs: %d %s", r.Code, r.Body)
	}
	select {
	case <-release:
		t.Fatal("the other game and the withdrawal waited for the hanging chain call")
	default:
	}
	if err := <-processed; err != nil {
		t.Fatal(err)
	}
	transfers, _ := a.Settlement.Transfers(ctx, hanging)
	if len(transfers) != 1 || transfers[0].Status != "confirmed" {
		t.Fatalf("the hanging sweep afterwards: %s, want it confirmed once", transferList(transfers))
	}
}
