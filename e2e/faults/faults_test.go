package faults_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/uptrace/bun"

	"wager/db/dbtest"
	"wager/domain/money"
	"wager/e2e/apiclient"
	"wager/e2e/faults"
)

// Each server gets a fresh database of its own (dbtest.Fresh); the
// package's own is unused but makes the helper's admin connection.
func TestMain(m *testing.M) { dbtest.Main(m) }

// finalizeSlots makes finalized come 6 s after confirmed on the chain.
const finalizeSlots = 15

// settleWithin bounds the wait for one money movement to be final: an
// intent's lifetime, its blockhash's, and the resolver's round after it.
const settleWithin = 150 * time.Second

// world is the running arrangement and the test's view of it.
type world struct {
	t     *testing.T
	ctx   context.Context
	pair  *faults.Pair
	start time.Time

	mu       sync.Mutex
	prepared []string // every intent id prepare answered
	notes    []string // what the client saw on the way (retries), for the log
}

// step logs the time a step of the test ended.
func (w *world) step(name string) {
	w.t.Logf("%6.1fs  %s done", time.Since(w.start).Seconds(), name)
}

func (w *world) note(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notes = append(w.notes, fmt.Sprintf(format, args...))
}

// user signs in to the API instance with a new wallet.
func (w *world) user(name string, admin solana.PrivateKey) *apiclient.Client {
	w.t.Helper()
	key := admin
	if key == nil {
		key = solana.NewWallet().PrivateKey
	}
	c := apiclient.New(w.pair.API.URL, key)
	c.AppID = "faults-" + name
	if err := c.Login(w.ctx); err != nil {
		w.t.Fatalf("%s signs in: %v", name, err)
	}
	return c
}

// call is a request with headers of its own, answering the status, the
// headers and the body whatever the status.
func call(ctx context.Context, c *apiclient.Client, method, path string, header map[string]string, body any) (int, http.Header, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, r)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-SDK-Version", apiclient.SDKVersion)
	req.Header.Set("X-App-Id", c.AppID)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data, err
}

func statusOf(err error) int {
	var ae *apiclient.Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// retrying calls fn until it succeeds or answers something other than 503
// (the chain did not answer in time; the API says to try again), for at
// most settleWithin.
func (w *world) retrying(what string, fn func() error) error {
	deadline := time.Now().Add(settleWithin)
	for tries := 1; ; tries++ {
		err := fn()
		if statusOf(err) != http.StatusServiceUnavailable || time.Now().After(deadline) || w.ctx.Err() != nil {
			if tries > 1 {
				w.note("%s: %d tries, last: %v", what, tries, err)
			}
			return err
		}
		time.Sleep(time.Second)
	}
}

// prepare asks for a user-signed transaction, again while 503.
func (w *world) prepare(c *apiclient.Client, path string, body any) (apiclient.Prepared, error) {
	var p apiclient.Prepared
	err := w.retrying("prepare "+path, func() error { return c.Do(w.ctx, http.MethodPost, path, body, &p) })
	if err == nil {
		w.mu.Lock()
		w.prepared = append(w.prepared, p.IntentID)
		w.mu.Unlock()
	}
	return p, err
}

// submit sends the signed transaction, again on every 503, until the
// answer is final.
func (w *world) submit(c *apiclient.Client, path string, p apiclient.Prepared, signed string, out any) error {
	return w.retrying("submit "+path+" "+p.IntentID, func() error {
		return c.Do(w.ctx, http.MethodPost, path, map[string]string{"intentId": p.IntentID, "signedTransaction": signed}, out)
	})
}

// move is prepare, sign, submit until final. A movement the server failed
// (409: expired, or refused by the network) is prepared anew, at most
// three times in all.
func (w *world) move(c *apiclient.Client, preparePath, submitPath string, body, out any) error {
	var err error
	for range 3 {
		var p apiclient.Prepared
		if p, err = w.prepare(c, preparePath, body); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		signed, serr := c.Sign(p)
		if serr != nil {
			return serr
		}
		if err = w.submit(c, submitPath, p, signed, out); statusOf(err) != http.StatusConflict {
			return err
		}
		w.note("%s: intent %s failed (%v); prepared anew", submitPath, p.IntentID, err)
	}
	return err
}

// deposit moves amount from c's wallet to its platform balance and checks,
// while the chain reports the deposit confirmed but not finalized, that
// the platform balance has not moved. It reports whether the deposit was
// made.
func (w *world) deposit(c *apiclient.Client, amount int64) bool {
	w.t.Helper()
	var before apiclient.Balance
	if err := w.retrying("balance", func() (err error) { before, err = c.Balance(w.ctx); return err }); err != nil {
		w.t.Errorf("balance before the deposit: %v", err)
		return false
	}
	for attempt := 1; ; attempt++ {
		p, err := w.prepare(c, "/wallets/transfer/prepare", map[string]any{"toAddress": before.DepositAddress, "amountMinor": amount})
		if err != nil {
			w.t.Errorf("prepare a deposit: %v", err)
			return false
		}
		signed, err := c.Sign(p)
		if err != nil {
			w.t.Error(err)
			return false
		}
		done := make(chan error, 1)
		go func() {
			var r struct{ Status, Signature string }
			err := w.submit(c, "/wallets/transfer/submit", p, signed, &r)
			if err == nil && r.Status != "confirmed" {
				err = fmt.Errorf("submit answered status %q", r.Status)
			}
			done <- err
		}()
		watched, credited, readErrs := w.watchCommitment(c, "wager:deposit:"+p.IntentID, before.AvailableMinor, done)
		err = <-done
		if readErrs > 0 {
			w.t.Errorf("GET /wallets/me/balance failed %d times while the deposit settled; API.md: reads never fail because the RPC did", readErrs)
		}
		if credited != "" {
			w.t.Errorf("deposit %s: %s", p.IntentID, credited)
		}
		if err == nil {
			if watched == 0 {
				w.t.Errorf("deposit %s: never saw it confirmed and not finalized on chain; the commitment check did not run", p.IntentID)
			}
			return true
		}
		if statusOf(err) != http.StatusConflict || attempt == 3 {
			w.t.Errorf("deposit %s of %d: %v", p.IntentID, amount, err)
			return false
		}
		w.note("deposit: intent %s failed (%v); prepared anew", p.IntentID, err)
	}
}

// watchCommitment polls, until done has a value (which it puts back), the
// chain for the transaction carrying memo; while the chain reports it
// confirmed and not finalized it reads c's platform balance, which must
// still be before. It returns how many such reads it made, a description
// of an early credit ("" for none) and how many balance reads failed.
func (w *world) watchCommitment(c *apiclient.Client, memo string, before int64, done chan error) (watched int, credited string, readErrs int) {
	for {
		select {
		case err := <-done:
			done <- err
			return watched, credited, readErrs
		case <-time.After(150 * time.Millisecond):
		}
		sigs, err := w.onChain(memo)
		if err != nil || len(sigs) == 0 {
			continue
		}
		st, err := w.pair.Statuses(w.ctx, sigs[0])
		if err != nil || len(st) == 0 || st[0] == nil || st[0].ConfirmationStatus != rpc.ConfirmationStatusConfirmed {
			continue
		}
		// A read waits at most money.ChainReadWait for the RPC, then answers
		// without the chain's part: more than that is a read that failed.
		read, cancel := context.WithTimeout(w.ctx, money.ChainReadWait+time.Second)
		b, err := c.Balance(read)
		cancel()
		if err != nil {
			readErrs++
			continue
		}
		// Read again: the chain may have finalized it while the balance was read.
		st2, err := w.pair.Statuses(w.ctx, sigs[0])
		if err != nil || len(st2) == 0 || st2[0] == nil || st2[0].ConfirmationStatus != rpc.ConfirmationStatusConfirmed {
			continue
		}
		watched++
		if b.AvailableMinor != before && credited == "" {
			credited = fmt.Sprintf("credited while %s was only confirmed on chain: available %d, was %d (CREDIT_COMMITMENT=finalized)",
				sigs[0], b.AvailableMinor, before)
		}
	}
}

// onChain returns the signatures of the transactions on the chain whose
// bytes hold s (a memo, an id), read from the chain instance's database.
func (w *world) onChain(s string) ([]string, error) {
	var sigs []string
	err := w.pair.ChainDB.NewSelect().Table("localchain.transactions").Column("signature").
		Where("position(?::bytea in raw) > 0", []byte(s)).Scan(w.ctx, &sigs)
	return sigs, err
}

// TestMoneyThroughAFaultyRPC drives every way money moves through an API
// instance whose Solana RPC drops sends, answers 429 and 503, hangs, loses
// answers, delays and hides fresh statuses, as outside clients would, and
// checks on the chain itself that each movement landed once, that wallets
// and platform balances add up, that the books balance with every intent
// final, and that a deposit is not credited before it is finalized.
func TestMoneyThroughAFaultyRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin, err := faults.BuildServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	admin := solana.NewWallet().PrivateKey
	var logs io.Writer
	if os.Getenv("FAULTS_VERBOSE") != "" {
		logs = os.Stderr
	}
	pair, err := faults.StartPair(ctx, faults.Options{Binary: bin, ChainDB: dbtest.Fresh(t), APIDB: dbtest.Fresh(t), DataDir: dir,
		Faults: faults.ClusterFaults, Seed: seed(), Finalize: finalizeSlots, Log: logs,
		APIEnv: map[string]string{"ADMIN_WALLETS": admin.PublicKey().String(), "ABUSE_OVERRIDES": "GET /games/available=1"}})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, pair: pair, start: time.Now()}
	t.Cleanup(func() {
		var stats strings.Builder
		pair.Proxy.Stats().Write(&stats)
		t.Logf("the proxy's counts:\n%s", stats.String())
		for _, n := range w.notes {
			t.Logf("client: %s", n)
		}
		if t.Failed() {
			t.Logf("API instance's warnings and errors:\n%s", faults.Problems(pair.API.Logs(), 150))
		}
		pair.Close()
	})

	staff := w.user("admin", admin)
	p1, p2, s1, s2 := w.user("p1", nil), w.user("p2", nil), w.user("s1", nil), w.user("s2", nil)
	minted := w.fund(map[*apiclient.Client]int64{p1: 10_000_000, p2: 10_000_000, s1: 5_000_000, s2: 5_000_000})

	// Deposits, two at once.
	var wg sync.WaitGroup
	var deposited [2]bool
	for i, c := range []*apiclient.Client{p1, p2} {
		wg.Go(func() { deposited[i] = w.deposit(c, 5_000_000) })
	}
	wg.Wait()
	if !deposited[0] || !deposited[1] {
		t.FailNow()
	}
	w.step("deposits")

	// Clients who go away: one prepares a deposit and never signs it;
	// others submit one and hang up at once, some before their first send
	// reached the chain. Each intent must still end on the platform's own:
	// the abandoned one expired, the signed ones confirmed, since the
	// platform keeps the signed bytes and sends them until they land or
	// expire (API.md, Chain faults).
	abandoned := w.abandon(s1, 1_000_000)
	var walkedAway []string
	for range walkAways {
		walkedAway = append(walkedAway, w.walkAway(s2, walkAwayAmount))
	}

	gameID := w.stakedGame(p1, p2)
	w.betAndDonate(gameID, p1, s1, s2)
	w.step("bet and donations")
	play(t, ctx, gameID, p1, p2)
	w.step("game")

	// A tip from wallet to wallet.
	if err := w.move(s2, "/tips/prepare", "/tips/broadcast", map[string]any{"toUserId": p2.UserID, "amountMinor": tip}, nil); err != nil {
		t.Errorf("tip: %v", err)
	}
	w.step("tip")

	// Withdrawals: p1 part of its winnings, s1 its bet's payout.
	pot := int64(2*stake + donation1 + donation2)
	gameFee := pot / 100
	betFee := int64(bet) / 100
	payout := int64(bet) - betFee
	for _, wd := range []struct {
		c      *apiclient.Client
		amount int64
	}{{p1, 2_000_000}, {s1, payout}} {
		wg.Go(func() { w.withdraw(wd.c, wd.amount) })
	}
	wg.Wait()
	w.step("withdrawals")

	// An x402 payment for a request past the abuse threshold.
	price := w.pay(staff, s2)
	w.step("x402 payment")

	w.waitEveryMovementFinal(abandoned)
	w.checkOnce()

	// Wallets on chain plus platform balances: everything minted is there,
	// less the platform's fees (the game's, the pool's, the x402 price).
	want := map[*apiclient.Client][2]int64{ // wallet, platform
		p1: {10_000_000 - 5_000_000 + 2_000_000, 5_000_000 - stake + pot - gameFee - 2_000_000},
		p2: {10_000_000 - 5_000_000 + tip, 5_000_000 - stake},
		s1: {5_000_000 - bet - donation1 + payout, 0},
		s2: {5_000_000 - donation2 - tip - price, 0},
	}
	// The walked-away deposits that landed moved money from s2's wallet to
	// its platform balance.
	landed := w.checkWalkAways(abandoned, walkedAway)
	want[s2] = [2]int64{want[s2][0] - landed*walkAwayAmount, want[s2][1] + landed*walkAwayAmount}
	total := w.checkHoldings(map[string]*apiclient.Client{"p1": p1, "p2": p2, "s1": s1, "s2": s2}, want)
	fees := gameFee + betFee + price
	var treasury int64
	if err := pair.APIDB.NewSelect().Table("ledger_accounts").Column("balance").Where("id = 'treasury'").Scan(ctx, &treasury); err != nil {
		t.Fatal(err)
	}
	if treasury != fees {
		t.Errorf("treasury %d, want the fees %d (game %d, pool %d, x402 %d)", treasury, fees, gameFee, betFee, price)
	}
	if total+fees != minted {
		t.Errorf("wallets and platform balances hold %d, plus fees %d = %d; %d were minted", total, fees, total+fees, minted)
	}
	w.checkReconciliation(staff)
}

// The amounts the test moves.
const (
	stake                     = 1_000_000
	bet, donation1, donation2 = 500_000, 200_000, 300_000
	tip                       = 100_000
	// walkAways deposits of walkAwayAmount are submitted by a client that
	// hangs up at once.
	walkAways, walkAwayAmount = 4, 250_000
)

// fund gives each client its amount of USDC on chain and gives its age,
// and returns what was minted in all.
func (w *world) fund(funded map[*apiclient.Client]int64) int64 {
	var minted int64
	for c, amount := range funded {
		if err := w.pair.Faucet(w.ctx, c.Key.PublicKey(), amount); err != nil {
			w.t.Fatal(err)
		}
		minted += amount
		// Off the embedded chain money goes in only after the age is given.
		if err := c.Do(w.ctx, http.MethodPost, "/users/me/age-confirmation", map[string]string{"birthDate": "1990-01-01"}, nil); err != nil {
			w.t.Fatal(err)
		}
	}
	return minted
}

// stakedGame opens a staked lobby of p1's that p1 and p2 join, and returns
// the game's id.
func (w *world) stakedGame(p1, p2 *apiclient.Client) string {
	t, ctx := w.t, w.ctx
	var lobby struct{ ID string }
	if err := w.retrying("open a lobby", func() error {
		return p1.Do(ctx, http.MethodPost, "/lobbies", map[string]any{"gameType": "rps", "stakeMinor": stake,
			"settings": map[string]any{"rounds": 3, "roundSeconds": 120}}, &lobby)
	}); err != nil {
		t.Fatalf("open a staked lobby: %v", err)
	}
	w.step("lobby")
	var joined struct{ Status, GameID string }
	for _, c := range []*apiclient.Client{p1, p2} {
		if err := c.Do(ctx, http.MethodPost, "/lobbies/"+lobby.ID+"/join-queue", nil, &joined); err != nil {
			t.Fatalf("join the queue: %v", err)
		}
	}
	if joined.Status != "matched" || joined.GameID == "" {
		t.Fatalf("p2 joined: %+v, want matched", joined)
	}
	return joined.GameID
}

// betAndDonate has the game watched by two spectators, at once: s1 bets on
// p1 and donates, s2 donates.
func (w *world) betAndDonate(gameID string, p1, s1, s2 *apiclient.Client) {
	t := w.t
	var wg sync.WaitGroup
	var moved [3]bool
	for i, m := range []struct {
		c            *apiclient.Client
		what         string
		body         map[string]any
		prep, submit string
	}{
		{s1, "bet", map[string]any{"onUserId": p1.UserID, "amountMinor": bet}, "/bets/prepare", "/bets/submit"},
		{s1, "donation", map[string]any{"amountMinor": donation1}, "/donations/prepare", "/donations/submit"},
		{s2, "donation", map[string]any{"amountMinor": donation2}, "/donations/prepare", "/donations/submit"},
	} {
		wg.Go(func() {
			var r struct {
				Signature string
				Refunded  bool
			}
			if err := w.move(m.c, "/games/"+gameID+m.prep, "/games/"+gameID+m.submit, m.body, &r); err != nil {
				t.Errorf("%s: %v", m.what, err)
			} else if r.Refunded {
				t.Errorf("%s %s was refunded: it landed after the game had moved on", m.what, r.Signature)
			} else {
				moved[i] = true
			}
		})
	}
	wg.Wait()
	if moved != [3]bool{true, true, true} {
		t.FailNow() // the expected balances assume them
	}
}

// waitEveryMovementFinal waits until everything the platform started has
// ended (the abandoned deposit once it expired), and fails for what did
// not.
func (w *world) waitEveryMovementFinal(abandoned apiclient.Prepared) {
	t := w.t
	if wait := time.Until(abandoned.ExpiresAt); wait > 0 {
		time.Sleep(wait) // let it expire before looking
	}
	stuck := w.waitFinal()
	w.step("everything final")
	moves, _ := faults.Movements(w.ctx, w.pair.APIDB)
	byState := map[string]int{}
	for _, m := range moves {
		byState[m.What+" "+m.Kind+" "+m.Status]++
	}
	t.Logf("movements recorded: %v", byState)
	for _, s := range stuck {
		if !strings.Contains(s, abandoned.IntentID) { // told by checkWalkAways
			t.Errorf("not final 90 s after the last movement: %s", s)
		}
	}
}

// checkWalkAways checks that the deposit never signed ended and that each
// one submitted by a client that hung up was confirmed; it returns how
// many of those were.
func (w *world) checkWalkAways(abandoned apiclient.Prepared, walkedAway []string) int64 {
	t, ctx := w.t, w.ctx
	var abandonedStatus string
	if err := w.pair.APIDB.NewSelect().Table("intents").Column("status").Where("id = ?", abandoned.IntentID).Scan(ctx, &abandonedStatus); err != nil {
		t.Fatal(err)
	}
	if abandonedStatus != "expired" && abandonedStatus != "failed" {
		t.Errorf("the deposit prepared and never signed, %s, is %s after it expired at %s; want it to end (expired)",
			abandoned.IntentID, abandonedStatus, abandoned.ExpiresAt.Format(time.RFC3339))
	}
	var landed int64
	for _, id := range walkedAway {
		var in struct{ Status, Error, Signature string }
		if err := w.pair.APIDB.NewSelect().Table("intents").Column("status", "error").ColumnExpr("coalesce(signature, '') AS signature").
			Where("id = ?", id).Scan(ctx, &in.Status, &in.Error, &in.Signature); err != nil {
			t.Fatal(err)
		}
		if in.Status == "confirmed" {
			landed++
			continue
		}
		t.Errorf("the deposit %s, signed and submitted once before its client hung up, is %s (%s), signature %s; "+
			"want confirmed: the platform holds the signed transaction and sends it until it lands or expires", id, in.Status, in.Error, in.Signature)
	}
	return landed
}

// checkHoldings checks each client's wallet on chain and platform balance
// against want, and returns what they hold in all.
func (w *world) checkHoldings(clients map[string]*apiclient.Client, want map[*apiclient.Client][2]int64) int64 {
	t, ctx := w.t, w.ctx
	var total int64
	for name, c := range clients {
		wallet, err := w.pair.TokenBalance(ctx, c.Key.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		var b apiclient.Balance
		if err := w.retrying("balance", func() (err error) { b, err = c.Balance(ctx); return err }); err != nil {
			t.Fatal(err)
		}
		platform := b.AvailableMinor + b.LockedMinor
		total += wallet + platform
		if got := [2]int64{wallet, platform}; got != want[c] {
			t.Errorf("%s: wallet %d and platform balance %d, want %d and %d", name, wallet, platform, want[c][0], want[c][1])
		}
	}
	return total
}

// checkReconciliation reads the books as the operator does, again while
// the faulty RPC left some address unread (the answer says which, and is
// not balanced then), and checks that they balance.
func (w *world) checkReconciliation(staff *apiclient.Client) {
	t, ctx := w.t, w.ctx
	var rec struct {
		LedgerTotalMinor, EntriesTotalMinor int64
		Balanced                            bool
		UnreadAddresses                     []string
		Addresses                           []struct {
			Label, Address                                              string
			ChainMinor, LedgerMinor, DifferenceMinor, UnattributedMinor int64
		}
	}
	for tries := 1; ; tries++ {
		if err := w.retrying("reconciliation", func() error { return staff.Do(ctx, http.MethodGet, "/admin/reconciliation", nil, &rec) }); err != nil {
			t.Fatalf("GET /admin/reconciliation: %v", err)
		}
		if len(rec.UnreadAddresses) == 0 || tries == 20 {
			break
		}
		w.note("reconciliation: %d addresses unread, read again", len(rec.UnreadAddresses))
		time.Sleep(time.Second)
	}
	if !rec.Balanced || rec.LedgerTotalMinor != 0 || rec.EntriesTotalMinor != 0 {
		t.Errorf("reconciliation: %+v, want balanced", rec)
	}
	for _, a := range rec.Addresses {
		if a.DifferenceMinor != 0 {
			t.Errorf("reconciliation: %s %s holds %d on chain, the ledger says %d", a.Label, a.Address, a.ChainMinor, a.LedgerMinor)
		}
	}
}

// abandon prepares a deposit of c's that nobody signs.
func (w *world) abandon(c *apiclient.Client, amount int64) apiclient.Prepared {
	var b apiclient.Balance
	if err := w.retrying("balance", func() (err error) { b, err = c.Balance(w.ctx); return err }); err != nil {
		w.t.Fatal(err)
	}
	var p apiclient.Prepared
	if err := w.retrying("prepare", func() error {
		return c.Do(w.ctx, http.MethodPost, "/wallets/transfer/prepare", map[string]any{"toAddress": b.DepositAddress, "amountMinor": amount}, &p)
	}); err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	w.prepared = append(w.prepared, p.IntentID)
	w.mu.Unlock()
	return p
}

// walkAway prepares a deposit of c's, signs it, submits it once and hangs
// up before any answer; it returns the intent's id.
func (w *world) walkAway(c *apiclient.Client, amount int64) string {
	p := w.abandon(c, amount)
	signed, err := c.Sign(p)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(w.ctx, 300*time.Millisecond)
	defer cancel()
	err = c.Do(ctx, http.MethodPost, "/wallets/transfer/submit", map[string]string{"intentId": p.IntentID, "signedTransaction": signed}, nil)
	w.note("the deposit %s submitted once, hung up after 300 ms: %v", p.IntentID, err)
	return p.IntentID
}

// seed is FAULTS_SEED, or 7: the proxy's schedule of faults.
func seed() uint64 {
	if n, err := strconv.ParseUint(os.Getenv("FAULTS_SEED"), 10, 64); err == nil {
		return n
	}
	return 7
}

// play plays the game to its end, p1 winning every round.
func play(t *testing.T, ctx context.Context, gameID string, p1, p2 *apiclient.Client) {
	t.Helper()
	moves := map[*apiclient.Client]string{p1: "rock", p2: "scissors"}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("game %s not over within 2 minutes", gameID)
		}
		var st struct {
			Status    string
			Submitted map[string]bool
		}
		err := p1.Do(ctx, http.MethodGet, "/games/"+gameID+"/state", nil, &st)
		if statusOf(err) == http.StatusConflict {
			break // no longer active
		} else if err != nil {
			t.Fatalf("game state: %v", err)
		}
		for c, m := range moves {
			if !st.Submitted[c.UserID] {
				c.Do(ctx, http.MethodPost, "/games/"+gameID+"/actions", map[string]any{"type": "move", "move": m}, nil)
			}
		}
	}
	var g struct {
		Status   string
		WinnerID string
	}
	if err := p1.Do(ctx, http.MethodGet, "/games/"+gameID, nil, &g); err != nil || g.Status != "completed" || g.WinnerID != p1.UserID {
		t.Fatalf("game %s: %+v %v; want completed, won by p1 %s", gameID, g, err, p1.UserID)
	}
}

// withdraw asks for a withdrawal under one idempotency key until it is
// confirmed or failed.
func (w *world) withdraw(c *apiclient.Client, amount int64) {
	key := fmt.Sprintf("faults-%s-%d", c.UserID, amount)
	deadline := time.Now().Add(settleWithin)
	for tries := 1; ; tries++ {
		code, _, body, err := call(w.ctx, c, http.MethodPost, "/wallets/withdraw", map[string]string{"Idempotency-Key": key},
			map[string]any{"amountMinor": amount})
		var wd struct{ ID, Status, Signature, Error string }
		json.Unmarshal(body, &wd)
		switch {
		case err == nil && code == http.StatusOK && wd.Status == "confirmed":
			if tries > 1 {
				w.note("withdrawal %s: %d tries", wd.ID, tries)
			}
			return
		case err == nil && wd.Status == "failed":
			w.t.Errorf("withdrawal %s of %d failed: %s", wd.ID, amount, wd.Error)
			return
		case time.Now().After(deadline) || w.ctx.Err() != nil:
			w.t.Errorf("withdrawal of %d not final within %v: last answer %d %s (%v)", amount, settleWithin, code, body, err)
			return
		case err == nil && code != http.StatusAccepted && code != http.StatusServiceUnavailable:
			w.t.Errorf("withdrawal of %d: %d %s", amount, code, body)
			return
		}
		time.Sleep(time.Second)
	}
}

// pay turns abuse controls on, makes c exceed GET /games/available's
// threshold (1), pays the 402 through prepare and submit, and is served
// with the payment; it returns the price.
func (w *world) pay(staff, c *apiclient.Client) int64 {
	t, ctx := w.t, w.ctx
	t.Helper()
	if err := staff.Do(ctx, http.MethodPut, "/admin/feature-flags/abuse-controls", map[string]bool{"enabled": true}, nil); err != nil {
		t.Fatalf("turn abuse controls on: %v", err)
	}
	defer staff.Do(context.WithoutCancel(ctx), http.MethodPut, "/admin/feature-flags/abuse-controls", map[string]bool{"enabled": false}, nil)
	var challenge struct {
		PaymentRequired json.RawMessage `json:"paymentRequired"`
	}
	for range 3 {
		code, _, body, err := call(ctx, c, http.MethodGet, "/games/available", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusPaymentRequired {
			json.Unmarshal(body, &challenge)
			break
		}
	}
	if challenge.PaymentRequired == nil {
		t.Fatal("GET /games/available past its threshold of 1 was never answered 402")
	}
	var req struct {
		Accepts []struct{ Amount string } `json:"accepts"`
	}
	json.Unmarshal(challenge.PaymentRequired, &req)
	if len(req.Accepts) == 0 {
		t.Fatalf("402 without accepts: %s", challenge.PaymentRequired)
	}
	price, err := strconv.ParseInt(req.Accepts[0].Amount, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var paid struct{ Signature, PaymentSignature string }
	if err := w.move(c, "/payments/prepare", "/payments/submit", map[string]any{"paymentRequired": challenge.PaymentRequired}, &paid); err != nil {
		t.Fatalf("x402 payment: %v", err)
	}
	code, header, body, err := call(ctx, c, http.MethodGet, "/games/available", map[string]string{"PAYMENT-SIGNATURE": paid.PaymentSignature}, nil)
	if err != nil || code != http.StatusOK || header.Get("PAYMENT-RESPONSE") == "" {
		t.Errorf("the request paid by %s: %d %s (%v), PAYMENT-RESPONSE %q", paid.Signature, code, body, err, header.Get("PAYMENT-RESPONSE"))
	} else if settled, err := base64.StdEncoding.DecodeString(header.Get("PAYMENT-RESPONSE")); err != nil ||
		!bytes.Contains(settled, []byte(paid.Signature)) {
		t.Errorf("PAYMENT-RESPONSE %s does not name %s", settled, paid.Signature)
	}
	return price
}

// waitFinal waits until every intent, withdrawal, settlement transfer and
// x402 payment of the API instance is final, and describes those that are
// not by the deadline: 90 s, which leaves the deposit whose client hung
// up its resolver's round and its blockhash's lifetime.
func (w *world) waitFinal() []string {
	deadline := time.Now().Add(90 * time.Second)
	for {
		open, err := faults.Unfinished(w.ctx, w.pair.APIDB)
		if err != nil {
			w.t.Fatal(err)
		}
		if len(open) == 0 || time.Now().After(deadline) || w.ctx.Err() != nil {
			return open
		}
		time.Sleep(time.Second)
	}
}

// checkOnce checks each movement the API instance recorded against the
// chain: a confirmed one landed exactly once, under the signature
// recorded, and is in the ledger once; a failed one never landed.
func (w *world) checkOnce() {
	t := w.t
	moves, err := faults.Movements(w.ctx, w.pair.APIDB)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) == 0 {
		t.Fatal("the API instance recorded no money movement")
	}
	sigs := make([]string, 0, len(moves))
	for _, m := range moves {
		if m.Signature != "" {
			sigs = append(sigs, m.Signature)
		}
	}
	landed := map[string]rpc.ConfirmationStatusType{}
	for i := 0; i < len(sigs); i += 100 {
		st, err := w.pair.Statuses(w.ctx, sigs[i:min(i+100, len(sigs))]...)
		if err != nil {
			t.Fatal(err)
		}
		for j, s := range st {
			if s != nil && s.Err == nil {
				landed[sigs[i+j]] = s.ConfirmationStatus
			}
		}
	}
	for _, m := range moves {
		onChain, err := w.onChain(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		final := m.Status == "confirmed"
		switch {
		case final && landed[m.Signature] != rpc.ConfirmationStatusFinalized:
			t.Errorf("%s: recorded %s under %s, which the chain reports %q", m, m.Status, m.Signature, landed[m.Signature])
		case final && m.ByMemo && (len(onChain) != 1 || onChain[0] != m.Signature):
			t.Errorf("%s: on chain %d times %v, want once, as %s", m, len(onChain), onChain, m.Signature)
		case !final && (len(onChain) > 0 || landed[m.Signature] != ""):
			t.Errorf("%s: %s (%s), yet on chain as %v %s: money moved that the platform did not record", m, m.Status, m.Error,
				onChain, landed[m.Signature])
		}
		if final && m.Records != 1 {
			t.Errorf("%s: its effect recorded %d times (ledger postings, tips) under %s, want once", m, m.Records, m.Signature)
		}
	}
	var unknown []string
	if err := w.pair.APIDB.NewSelect().Table("intents").Column("id").Where("id NOT IN (?)", bun.List(w.prepared)).Scan(w.ctx, &unknown); err != nil {
		t.Fatal(err)
	}
	if len(unknown) > 0 {
		t.Errorf("intents no client prepared: %v", unknown)
	}
}
