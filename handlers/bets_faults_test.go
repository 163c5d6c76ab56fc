package handlers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/chain/localchain"
	"wager/domain/money"
)

// faults injects failures into one game's settlement through PostgreSQL
// triggers, so that the statement the server is running fails exactly
// where a crash would stop it, and nothing in the server knows about it.
type faults struct {
	t    *testing.T
	a    *testApp
	game string
}

func newFaults(t *testing.T, a *testApp, game string) *faults {
	t.Helper()
	if _, err := a.DB.ExecContext(context.Background(), `CREATE OR REPLACE FUNCTION injected_fault() RETURNS trigger
		LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault: %', TG_ARGV[0]; END $$`); err != nil {
		t.Fatal(err)
	}
	return &faults{t: t, a: a, game: game}
}

// arm makes the next matching write (event: "INSERT" or "UPDATE") to table
// fail; when names the rows, with GAME standing for the game's id.
func (f *faults) arm(name, event, table, when string) {
	f.t.Helper()
	when = strings.ReplaceAll(when, "GAME", f.game)
	sql := fmt.Sprintf(`CREATE TRIGGER injected_fault BEFORE %s ON %s FOR EACH ROW WHEN (%s)
		EXECUTE FUNCTION injected_fault('%s')`, event, table, when, strings.ReplaceAll(name, "'", "''"))
	if _, err := f.a.DB.ExecContext(context.Background(), sql); err != nil {
		f.t.Fatalf("arm %s: %v", name, err)
	}
	f.t.Cleanup(func() { f.disarm(table) })
}

func (f *faults) disarm(table string) {
	if _, err := f.a.DB.ExecContext(context.Background(), "DROP TRIGGER IF EXISTS injected_fault ON "+table); err != nil {
		f.t.Fatal(err)
	}
}

// leaseRunsOut ends the lease a dead worker held on the game's transfers,
// as the passing of TransferLease would.
func (f *faults) leaseRunsOut() {
	f.t.Helper()
	if _, err := f.a.DB.ExecContext(context.Background(),
		"UPDATE settlement_transfers SET updated_at = now() - interval '1 second' WHERE game_id = ?", f.game); err != nil {
		f.t.Fatal(err)
	}
}

// lostSend fails the sending of transactions that signer signs, while
// armed, as if the process died before the bytes reached the chain.
type lostSend struct {
	next   localchain.Transport
	signer solana.PublicKey
	armed  atomic.Bool
}

func (l *lostSend) Do(req *http.Request) (*http.Response, error) {
	call, err := readRPC(req)
	if err != nil {
		return nil, err
	}
	if call.Method == "sendTransaction" && len(call.Params) > 0 && l.armed.Load() {
		var b64 string
		json.Unmarshal(call.Params[0], &b64)
		raw, _ := base64.StdEncoding.DecodeString(b64)
		if tx, err := solana.TransactionFromBytes(raw); err == nil {
			if _, signs := chain.SignatureOf(tx, l.signer); signs {
				return nil, errors.New("connection reset before the transaction was sent")
			}
		}
	}
	return l.next.Do(req)
}

func (l *lostSend) CloseIdleConnections() {}

// Settlement of a game with bets is stopped at each of its steps in turn:
// each statement of the settlement transaction, then the signing, the
// sending and the recording of the bet pool's sweep. Each time the work is
// picked up again (the move retried, another instance's transfer worker),
// and in the end every bet was paid exactly once, every bettor told once,
// and the escrow is empty on chain and in the books.
func TestBetsArePaidOnceWhereverSettlementDies(t *testing.T) {
	one, two := newTestApp(t, noWorkers), newTestApp(t, noWorkers)
	ctx := context.Background()
	if _, err := one.Settlement.ProcessTransfers(ctx); err != nil { // other tests' leftovers
		t.Fatal(err)
	}
	p1, p2, game := one.stakedGame(t, 100_000, `{"rounds": 1}`)
	s1, s2, s3 := one.spectatorWith(t, 100_000), one.spectatorWith(t, 250_000), one.spectatorWith(t, 650_000)
	one.bet(t, s1, game, p1.id, 100_000)
	one.bet(t, s2, game, p1.id, 250_000)
	one.bet(t, s3, game, p2.id, 650_000)
	treasury := one.ledger(t, money.Treasury)
	one.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	f := newFaults(t, one, game)

	betSettlementDiesAtEachStatement(t, one, f, game, p2, []player{s1, s2, s3})
	// The retried move settles the game, once.
	one.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	betSweepDiesAtEachStep(t, one, two, f, game)

	// T = 1000000, fee 10000; 990000 shared by 100000 and 250000 on the winner:
	// floor(990000 * 100000 / 350000) = 282857, floor(990000 * 250000 / 350000)
	// = 707142, and the 1 the floors leave goes to the treasury.
	paid := map[string]int64{s1.id: 282_857, s2.id: 707_142, s3.id: 0}
	for _, s := range []player{s1, s2, s3} {
		one.checkBettorPaidOnce(t, s, paid[s.id])
	}
	for _, b := range one.betsOf(t, game).Bets {
		if b.PayoutMinor != paid[b.UserID] {
			t.Errorf("bet %+v, want payout %d", b, paid[b.UserID])
		}
	}
	if got := one.ledger(t, money.Treasury) - treasury; got != 2_000+10_000+1 {
		t.Errorf("treasury: +%d, want the stakes' fee 2000, the bets' 10000 and the floors' 1", got)
	}
	var feed int
	if err := one.DB.QueryRowContext(ctx, "SELECT count(*) FROM activity WHERE type = 'bet_won' AND data->>'gameId' = ?",
		game).Scan(&feed); err != nil || feed != 2 {
		t.Errorf("bet_won feed entries: %d %v, want one per winning bet", feed, err)
	}
	one.wantBetsSettled(t, game)
}

// betSettlementSteps are the statements of a game's settlement that touch
// its bets, each as the write that a fault armed on it stops.
var betSettlementSteps = []struct{ name, event, table, when string }{
	{"posting the bet pool", "INSERT", "ledger_transactions", "NEW.reference = 'bets:GAME'"},
	{"marking the bets won and lost", "UPDATE", "bets", "NEW.game_id = 'GAME' AND NEW.status <> 'open'"},
	{"the bettors' history", "INSERT", "wallet_activity", "NEW.game_id = 'GAME' AND NEW.kind LIKE 'bet%'"},
	{"notifying the bettors", "INSERT", "notifications", "NEW.type = 'bet_settled' AND NEW.data->>'gameId' = 'GAME'"},
	{"the feed's bet_won entry", "INSERT", "activity", "NEW.type = 'bet_won' AND NEW.data->>'gameId' = 'GAME'"},
	{"queueing the pool's sweep", "INSERT", "settlement_transfers", "NEW.game_id = 'GAME'"},
	{"recording the settlement", "INSERT", "settlements", "NEW.game_id = 'GAME'"},
}

// betSettlementDiesAtEachStatement has p2's move that ends the game, and
// settles it, die at each statement in turn: each time the bets stay open,
// the pool whole and the bettors unpaid.
func betSettlementDiesAtEachStatement(t *testing.T, one *testApp, f *faults, game string, p2 player, bettors []player) {
	t.Helper()
	for _, step := range betSettlementSteps {
		f.arm(step.name, step.event, step.table, step.when)
		r := one.do(t, request{method: http.MethodPost, path: "/games/" + game + "/actions", header: p2.auth,
			body: `{"type": "move", "move": "scissors"}`})
		f.disarm(step.table)
		if r.Code != http.StatusInternalServerError {
			t.Fatalf("dying at %s: the move answered %d %s, want 500", step.name, r.Code, r.Body)
		}
		v := one.betsOf(t, game)
		for _, b := range v.Bets {
			if b.Status != "open" || b.PayoutMinor != 0 {
				t.Errorf("dying at %s: bet %+v is no longer open", step.name, b)
			}
		}
		if !v.Open || v.TotalMinor != 1_000_000 || one.ledger(t, money.BetPool(game)) != 1_000_000 {
			t.Errorf("dying at %s: the pool is %+v, ledger %d", step.name, v, one.ledger(t, money.BetPool(game)))
		}
		for _, s := range bettors {
			if b := one.balances(t, s.auth); b.available != 0 {
				t.Errorf("dying at %s: a bettor has %d available", step.name, b.available)
			}
		}
	}
}

// betSweepDiesAtEachStep has the worker of the pool's sweep die while
// signing, before the signed transaction reaches the chain, and after the
// chain confirmed it but before it was recorded; another instance's
// worker then records the one sweep that landed.
func betSweepDiesAtEachStep(t *testing.T, one, two *testApp, f *faults, game string) {
	t.Helper()
	ctx := context.Background()
	// The pool's sweep: its worker dies while signing, ...
	f.arm("signing the sweep", "UPDATE", "settlement_transfers", "NEW.game_id = 'GAME' AND NEW.status = 'sent'")
	if _, err := one.Settlement.ProcessTransfers(ctx); err == nil || !strings.Contains(err.Error(), "injected fault") {
		t.Fatalf("transfers while signing dies: %v", err)
	}
	f.disarm("settlement_transfers")
	transfers, _ := one.Settlement.Transfers(ctx, game)
	if len(transfers) != 1 || transfers[0].Status != "pending" || transfers[0].Signature != nil {
		t.Fatalf("after dying while signing: %s", transferList(transfers))
	}
	// ... before the signed transaction reaches the chain, ...
	f.leaseRunsOut()
	client := two.Money.Chain()
	saved := *client
	t.Cleanup(func() { *client = saved })
	lost := &lostSend{next: localchain.Transport{Chain: two.LocalChain}, signer: two.Settlement.EscrowAddress(game)}
	lost.armed.Store(true)
	*client = *chain.NewClient("http://embedded-chain", lost)
	if n, _ := two.Settlement.ProcessTransfers(ctx); n != 0 {
		t.Fatalf("%d transfers confirmed without reaching the chain", n)
	}
	*client = saved
	transfers, _ = one.Settlement.Transfers(ctx, game)
	if len(transfers) != 1 || transfers[0].Status != "sent" || transfers[0].Signature == nil {
		t.Fatalf("after the send was lost: %s", transferList(transfers))
	}
	signed := *transfers[0].Signature
	if got := one.onChain(t, one.Settlement.EscrowAddress(game)); got != 1_000_000 {
		t.Fatalf("escrow holds %d after a lost send, want the 1000000 bet", got)
	}
	// ... and after the chain confirmed it, before it was recorded.
	f.leaseRunsOut()
	f.arm("recording the sweep", "UPDATE", "settlement_transfers", "NEW.game_id = 'GAME' AND NEW.status = 'confirmed'")
	if _, err := two.Settlement.ProcessTransfers(ctx); err == nil || !strings.Contains(err.Error(), "injected fault") {
		t.Fatalf("transfers while recording dies: %v", err)
	}
	f.disarm("settlement_transfers")
	if got := one.onChain(t, one.Settlement.EscrowAddress(game)); got != 0 {
		t.Fatalf("escrow holds %d on chain after the sweep landed", got)
	}
	// Restarted, the worker records the transfer that landed: the same
	// signature, not a second transfer.
	f.leaseRunsOut()
	if n, err := two.Settlement.ProcessTransfers(ctx); err != nil || n != 1 {
		t.Fatalf("transfers after the restart: %d %v", n, err)
	}
	transfers, _ = one.Settlement.Transfers(ctx, game)
	if len(transfers) != 1 || transfers[0].Status != "confirmed" || *transfers[0].Signature != signed {
		t.Fatalf("after the restart: %s, want the one sweep %s confirmed", transferList(transfers), signed)
	}
}

// checkBettorPaidOnce checks that bettor s was paid paid, told once, and
// has a winnings line in their history when they won.
func (a *testApp) checkBettorPaidOnce(t *testing.T, s player, paid int64) {
	t.Helper()
	if b := a.balances(t, s.auth); b.available != paid || b.locked != 0 {
		t.Errorf("bettor %s: %+v, want %d available", s.id, b, paid)
	}
	ns, _ := a.notifications(t, s, "")
	settled := 0
	for _, n := range ns {
		if n.Type == "bet_settled" {
			settled++
		}
	}
	if settled != 1 {
		t.Errorf("bettor %s got %d bet_settled notifications, want 1", s.id, settled)
	}
	lines := 0
	for _, it := range a.historyItems(t, s) {
		if it["kind"] == "bet winnings" {
			lines++
		}
	}
	if want := map[bool]int{true: 1, false: 0}[paid > 0]; lines != want {
		t.Errorf("bettor %s has %d winnings lines in their history, want %d", s.id, lines, want)
	}
}
