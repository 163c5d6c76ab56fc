package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain/rpcfaults"
	"wager/domain"
	"wager/e2e/apiclient"
	"wager/e2e/faults"
)

// FaultsResult is the rpc-faults scenario: games and money moving through
// an API instance whose Solana RPC is a fault-injecting proxy.
type FaultsResult struct {
	Seed             uint64  `json:"seed" doc:"of the proxy's schedule of faults"`
	FinalizeSlots    int     `json:"finalizeSlots"`
	DurationSeconds  float64 `json:"durationSeconds" doc:"the span games and intents were started in"`
	DrainSeconds     float64 `json:"drainSeconds" doc:"after it, until every movement was final or -drain passed"`
	GamesPerMinute   int     `json:"gamesPerMinute"`
	IntentsPerMinute int     `json:"intentsPerMinute"`
	GamesStarted     int     `json:"gamesStarted"`
	GamesCompleted   int     `json:"gamesCompleted"`
	GamesSkipped     int     `json:"gamesSkipped" doc:"ticks that found every table busy"`
	// Movements are everything the API instance recorded: intents (by
	// kind), withdrawals and settlement transfers, by their state at the
	// end.
	ByState     []StateCount       `json:"byState"`
	Unfinished  []string           `json:"unfinished" doc:"movements not final at the end, described"`
	Started     int                `json:"started" doc:"money movements the clients started"`
	Ended       map[string]int     `json:"ended" doc:"how they ended for the client: final, failed (409), gave up"`
	TimeToFinal Latency            `json:"timeToFinal" doc:"from the prepare (a withdrawal: its first request) to the answer that was final"`
	ByKind      map[string]Latency `json:"byKind"`
	RPC         RPCUse             `json:"rpc"`
	Fees        FeeSummary         `json:"fees" doc:"of the transactions the API instance's fee payer paid for, from the embedded chain"`
}

// StateCount is how many movements of one kind are in one state.
type StateCount struct {
	Kind  string `json:"kind"`
	State string `json:"state"`
	Count int    `json:"count"`
}

// RPCUse is what the proxy saw, per money movement recorded.
type RPCUse struct {
	Calls       int           `json:"calls"`
	Movements   int           `json:"movements"`
	PerMovement float64       `json:"perMovement"`
	ByMethod    []MethodCalls `json:"byMethod"`
	Faults      rpcfaults.Calls
}

// MethodCalls is one JSON-RPC method's calls, in all and per movement.
type MethodCalls struct {
	Method      string  `json:"method"`
	Calls       int     `json:"calls"`
	PerMovement float64 `json:"perMovement"`
}

// FeeSummary sums up the fees of a set of transactions, in lamports.
type FeeSummary struct {
	Transactions  int     `json:"transactions"`
	TotalLamports int64   `json:"totalLamports"`
	MeanLamports  float64 `json:"meanLamports"`
	P50Lamports   int64   `json:"p50Lamports"`
	MaxLamports   int64   `json:"maxLamports"`
}

// stateCounts counts movements by kind and state, in kind then state order.
func stateCounts(moves []faults.Movement) []StateCount {
	counts := map[[2]string]int{}
	for _, m := range moves {
		counts[[2]string{m.Kind, m.Status}]++
	}
	out := make([]StateCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, StateCount{Kind: k[0], State: k[1], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].State < out[j].State
	})
	return out
}

// rpcUse divides the proxy's counts by the movements recorded (none: the
// per-movement figures are 0).
func rpcUse(s rpcfaults.Stats, movements int) RPCUse {
	total := s.Total()
	u := RPCUse{Calls: total.Calls, Movements: movements, Faults: total}
	per := func(n int) float64 {
		if movements == 0 {
			return 0
		}
		return float64(n) / float64(movements)
	}
	u.PerMovement = per(total.Calls)
	for _, m := range slices.Sorted(maps.Keys(s.Methods)) {
		u.ByMethod = append(u.ByMethod, MethodCalls{Method: m, Calls: s.Methods[m].Calls, PerMovement: per(s.Methods[m].Calls)})
	}
	return u
}

// feeSummary sums up fees (lamports); it sorts fees in place.
func feeSummary(fees []int64) FeeSummary {
	if len(fees) == 0 {
		return FeeSummary{}
	}
	slices.Sort(fees)
	var sum int64
	for _, f := range fees {
		sum += f
	}
	return FeeSummary{Transactions: len(fees), TotalLamports: sum, MeanLamports: float64(sum) / float64(len(fees)),
		P50Lamports: fees[(len(fees)-1)/2], MaxLamports: fees[len(fees)-1]}
}

// Money amounts of the scenario, in USDC minor units.
const (
	faultsFunding  = 50_000_000 // each money user's wallet
	faultsBalance  = 10_000_000 // deposited at the start, which withdrawals draw on
	faultsDeposit  = 100_000
	faultsWithdraw = 100_000 // the smallest withdrawal
	faultsTip      = 10_000
	faultsDonation = 10_000
)

// faultsEngine runs the scenario's clients.
type faultsEngine struct {
	r       *runner
	pair    *faults.Pair
	money   []*apiclient.Client
	tables  [][2]*apiclient.Client // free games
	donated [][2]*apiclient.Client // games that take a donation

	busy        []atomic.Bool
	donatedBusy []atomic.Bool
	started     atomic.Int64
	completed   atomic.Int64
	skipped     atomic.Int64

	mu      sync.Mutex
	took    map[string][]time.Duration
	ended   map[string]int
	moves   int
	nextKey atomic.Int64
}

// rpcFaults is the rpc-faults scenario.
func (r *runner) rpcFaults(ctx context.Context) error {
	c := r.cfg
	res := &FaultsResult{Seed: c.Seed, FinalizeSlots: c.FinalizeSlots, GamesPerMinute: c.GamesPerMinute,
		IntentsPerMinute: c.IntentsPerMinute, Ended: map[string]int{}, ByKind: map[string]Latency{}}
	r.report.Faults = res
	dir, err := os.MkdirTemp("", "loadtest-rpc-faults-")
	if err != nil {
		return setupError("a temporary folder", err)
	}
	defer os.RemoveAll(dir)
	r.progress("building the server and creating two databases")
	bin, err := faults.BuildServer(dir)
	if err != nil {
		return setupError("build", err)
	}
	chainDB, dropChain, err := faults.CreateDatabase(ctx, c.DatabaseURL, "loadtest_chain")
	if err != nil {
		return setupError("database", err)
	}
	defer dropChain()
	apiDB, dropAPI, err := faults.CreateDatabase(ctx, c.DatabaseURL, "loadtest_api")
	if err != nil {
		return setupError("database", err)
	}
	defer dropAPI()
	pair, err := faults.StartPair(ctx, faults.Options{Binary: bin, ChainDB: chainDB, APIDB: apiDB, DataDir: dir,
		Faults: faults.ClusterFaults, Seed: c.Seed, Finalize: c.FinalizeSlots,
		APIEnv: map[string]string{"FEE_PAYER_GLOBAL_DAILY_LAMPORTS": "0"}})
	if err != nil {
		return setupError("start the two servers", err)
	}
	defer pair.Close()
	r.cfg.URL = pair.API.URL
	r.report.URL = pair.API.URL
	r.progress("chain instance %s, proxy %s, API instance %s", pair.Chain.URL, pair.ProxyURL, pair.API.URL)

	e, err := r.faultsClients(ctx, pair)
	if err != nil {
		return err
	}
	e.run(ctx, res)
	return e.results(res)
}

// faultsClients signs in the scenario's players and money users, and
// funds the money users and deposits for them through the faulty RPC.
func (r *runner) faultsClients(ctx context.Context, pair *faults.Pair) (*faultsEngine, error) {
	// A game lasts about a second: 40 tables keep 200 a minute going with
	// room to spare; the money users and donation tables take 50 intents.
	const tables, donationTables, moneyUsers = 40, 10, 24
	clients, err := r.signIn(ctx, 2*tables+2*donationTables+moneyUsers)
	if err != nil {
		return nil, setupError("sign in", err)
	}
	e := &faultsEngine{r: r, pair: pair, money: clients[2*tables+2*donationTables:], busy: make([]atomic.Bool, tables),
		donatedBusy: make([]atomic.Bool, donationTables),
		took:        map[string][]time.Duration{}, ended: map[string]int{}}
	for i := range tables {
		e.tables = append(e.tables, [2]*apiclient.Client{clients[2*i], clients[2*i+1]})
	}
	for i := range donationTables {
		e.donated = append(e.donated, [2]*apiclient.Client{clients[2*tables+2*i], clients[2*tables+2*i+1]})
	}
	r.progress("funding %d money users and depositing %s each", moneyUsers, fmtUSDC(faultsBalance))
	if err := forEach(ctx, moneyUsers, 8, func(ctx context.Context, i int) error {
		u := e.money[i]
		if err := pair.Faucet(ctx, u.Key.PublicKey(), faultsFunding); err != nil {
			return err
		}
		if err := u.Do(ctx, http.MethodPost, "/users/me/age-confirmation", map[string]string{"birthDate": "1990-01-01"}, nil); err != nil {
			return err
		}
		_, err := e.deposit(ctx, u, faultsBalance)
		return err
	}); err != nil {
		return nil, setupError("fund the money users", err)
	}
	return e, nil
}

// run starts games and money intents at their rates for -duration, waits
// for the clients' movements to end, then up to -drain for every movement
// to be final on the server.
func (e *faultsEngine) run(ctx context.Context, res *FaultsResult) {
	c := e.r.cfg
	e.r.progress("games at %d/min and money intents at %d/min for %v", c.GamesPerMinute, c.IntentsPerMinute, c.Duration)
	start := time.Now()
	var wg sync.WaitGroup
	run, stop := context.WithTimeout(ctx, c.Duration)
	defer stop()
	wg.Go(func() {
		e.every(run, time.Minute/time.Duration(c.GamesPerMinute), func(i int) { wg.Go(func() { e.game(ctx, i) }) })
	})
	kinds := []string{"deposit", "withdrawal", "tip", "donation"}
	wg.Go(func() {
		e.every(run, time.Minute/time.Duration(c.IntentsPerMinute), func(i int) {
			wg.Go(func() { e.intent(ctx, kinds[i%len(kinds)], i) })
		})
	})
	<-run.Done()
	res.DurationSeconds = time.Since(start).Seconds()
	e.r.progress("waiting for the clients' movements to end")
	wg.Wait()
	drainStart := time.Now()
	e.r.progress("waiting up to %v for every movement to be final on the server", c.Drain)
	for time.Since(drainStart) < c.Drain && ctx.Err() == nil {
		open, err := faults.Unfinished(ctx, e.pair.APIDB)
		if err == nil && len(open) == 0 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	res.DrainSeconds = time.Since(drainStart).Seconds()
}

// results reads what the run left, once it is over: the movements by
// state, the RPC's use, the fees, the games and the times to final.
func (e *faultsEngine) results(res *FaultsResult) error {
	after, cancel := afterRun()
	defer cancel()
	moves, err := faults.Movements(after, e.pair.APIDB)
	if err != nil {
		return err
	}
	if res.Unfinished, err = faults.Unfinished(after, e.pair.APIDB); err != nil {
		return err
	}
	res.ByState = stateCounts(moves)
	res.RPC = rpcUse(e.pair.Proxy.Stats(), len(moves))
	fees, err := e.fees(after)
	if err != nil {
		return err
	}
	res.Fees = feeSummary(fees)
	res.GamesStarted, res.GamesCompleted, res.GamesSkipped = int(e.started.Load()), int(e.completed.Load()), int(e.skipped.Load())
	e.mu.Lock()
	defer e.mu.Unlock()
	res.Started = e.moves
	maps.Copy(res.Ended, e.ended)
	var all []time.Duration
	for kind, ds := range e.took {
		all = append(all, ds...)
		res.ByKind[kind] = Summarize(slices.Clone(ds))
	}
	res.TimeToFinal = Summarize(all)
	return nil
}

// every calls fn(i) with i = 0, 1, 2... every d until ctx is done.
func (e *faultsEngine) every(ctx context.Context, d time.Duration, fn func(int)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for i := 0; ; i++ {
		fn(i)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// game plays a free one-round game at the i-th table when it is free.
func (e *faultsEngine) game(ctx context.Context, i int) {
	t := i % len(e.tables)
	if !e.busy[t].CompareAndSwap(false, true) {
		e.skipped.Add(1)
		return
	}
	defer e.busy[t].Store(false)
	a, b := e.tables[t][0], e.tables[t][1]
	e.started.Add(1)
	if e.playOne(ctx, a, b, nil) {
		e.completed.Add(1)
	}
}

// playOne starts a free one-round game of a and b, runs between (when not
// nil) while it is active, then has a win it; it reports whether the game
// ended.
func (e *faultsEngine) playOne(ctx context.Context, a, b *apiclient.Client, between func(gameID string)) bool {
	id, _, err := startGame(ctx, a, b, rpsSettings{Rounds: 1, RoundSeconds: 120})
	if err != nil {
		e.r.errs.Add("game start: " + errorKind(err))
		freePlayers(ctx, a, b)
		return false
	}
	if between != nil {
		between(id)
	}
	for _, p := range []struct {
		c      *apiclient.Client
		choice string
	}{{a, "rock"}, {b, "scissors"}} {
		if _, _, err := act(ctx, p.c, id, move(p.choice)); err != nil {
			e.r.errs.Add("move: " + errorKind(err))
			freePlayers(ctx, a, b)
			return false
		}
	}
	return true
}

// intent starts the i-th money movement, of kind.
func (e *faultsEngine) intent(ctx context.Context, kind string, i int) {
	u := e.money[i%len(e.money)]
	var took time.Duration
	var err error
	switch kind {
	case "deposit":
		took, err = e.deposit(ctx, u, faultsDeposit)
	case "withdrawal":
		took, err = e.withdraw(ctx, u, faultsWithdraw)
	case "tip":
		to := e.money[(i+1)%len(e.money)]
		took, err = e.move(ctx, u, "/tips/prepare", "/tips/broadcast", map[string]any{"toUserId": to.UserID, "amountMinor": faultsTip})
	case "donation":
		t := (i / 4) % len(e.donated)
		if !e.donatedBusy[t].CompareAndSwap(false, true) {
			e.r.errs.Add("donation: every donation table busy")
			return
		}
		defer e.donatedBusy[t].Store(false)
		players := e.donated[t]
		e.playOne(ctx, players[0], players[1], func(gameID string) {
			took, err = e.move(ctx, u, "/games/"+gameID+"/donations/prepare", "/games/"+gameID+"/donations/submit",
				map[string]any{"amountMinor": faultsDonation})
		})
	}
	e.record(kind, took, err)
}

// record counts how a client's movement ended.
func (e *faultsEngine) record(kind string, took time.Duration, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.moves++
	var ae *apiclient.Error
	switch {
	case err == nil:
		e.ended["final"]++
		e.took[kind] = append(e.took[kind], took)
	case errors.As(err, &ae) && ae.Status == http.StatusConflict:
		e.ended["failed (409)"]++
		e.took[kind] = append(e.took[kind], took)
	default:
		e.ended["gave up"]++
		e.r.errs.Add(kind + ": " + errorKind(err))
	}
}

// giveUpAfter bounds one client's wait for a movement to be final.
const giveUpAfter = 3 * time.Minute

// again calls fn until it answers something other than 503, for at most
// giveUpAfter.
func again(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(giveUpAfter)
	for {
		err := fn()
		var ae *apiclient.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return err
		}
		if !domain.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// move is prepare, sign, submit until final; it answers the time from the
// prepare to the final answer.
func (e *faultsEngine) move(ctx context.Context, u *apiclient.Client, preparePath, submitPath string, body any) (time.Duration, error) {
	start := time.Now()
	var p apiclient.Prepared
	if err := again(ctx, func() error { return u.Do(ctx, http.MethodPost, preparePath, body, &p) }); err != nil {
		return 0, fmt.Errorf("prepare: %w", err)
	}
	signed, err := u.Sign(p)
	if err != nil {
		return 0, err
	}
	err = again(ctx, func() error {
		return u.Do(ctx, http.MethodPost, submitPath, map[string]string{"intentId": p.IntentID, "signedTransaction": signed}, nil)
	})
	return time.Since(start), err
}

func (e *faultsEngine) deposit(ctx context.Context, u *apiclient.Client, amount int64) (time.Duration, error) {
	to := e.pair.APIKeys.Vault().PublicKey().String()
	return e.move(ctx, u, "/wallets/transfer/prepare", "/wallets/transfer/submit", map[string]any{"toAddress": to, "amountMinor": amount})
}

// withdraw asks for a withdrawal under one idempotency key until it is
// confirmed or failed.
func (e *faultsEngine) withdraw(ctx context.Context, u *apiclient.Client, amount int64) (time.Duration, error) {
	start := time.Now()
	key := fmt.Sprintf("loadtest-%d", e.nextKey.Add(1))
	deadline := start.Add(giveUpAfter)
	for {
		var w struct{ Status, Error string }
		code, err := doWithHeader(ctx, u, http.MethodPost, "/wallets/withdraw", "Idempotency-Key", key, map[string]any{"amountMinor": amount}, &w)
		switch {
		case err == nil && w.Status == "confirmed":
			return time.Since(start), nil
		case err == nil && w.Status == "failed":
			return time.Since(start), &apiclient.Error{Status: http.StatusConflict, Code: "CONFLICT", Message: w.Error}
		case err != nil && code != http.StatusServiceUnavailable:
			return 0, err
		case time.Now().After(deadline):
			return 0, fmt.Errorf("withdrawal not final within %v", giveUpAfter)
		}
		if !domain.Sleep(ctx, time.Second) {
			return 0, ctx.Err()
		}
	}
}

// doWithHeader is apiclient.Client.Do with one more header; it answers the
// status too.
func doWithHeader(ctx context.Context, c *apiclient.Client, method, path, name, value string, body, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, strings.NewReader(string(b)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-SDK-Version", apiclient.SDKVersion)
	req.Header.Set("X-App-Id", c.AppID)
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set(name, value)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		e := &apiclient.Error{Status: resp.StatusCode}
		json.NewDecoder(resp.Body).Decode(e)
		return resp.StatusCode, e
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

// fees reads the fee of every transaction on the embedded chain that the
// API instance's fee payer paid for.
func (e *faultsEngine) fees(ctx context.Context) ([]int64, error) {
	var rows []struct {
		Fee int64  `bun:"fee"`
		Raw []byte `bun:"raw"`
	}
	if err := e.pair.ChainDB.NewSelect().Table("localchain.transactions").Column("fee", "raw").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read the chain's transactions: %w", err)
	}
	payer := e.pair.APIKeys.FeePayer().PublicKey()
	var fees []int64
	for _, row := range rows {
		tx, err := solana.TransactionFromBytes(row.Raw)
		if err != nil || len(tx.Message.AccountKeys) == 0 || !tx.Message.AccountKeys[0].Equals(payer) {
			continue
		}
		fees = append(fees, row.Fee)
	}
	return fees, nil
}

func fmtUSDC(minor int64) string {
	return fmt.Sprintf("%d.%06d USDC", minor/1_000_000, minor%1_000_000)
}

// faultsTable is the rpc-faults scenario's table.
func faultsTable(rep *Report) Table {
	f := rep.Faults
	t := Table{Header: metricHeader}
	t.Rows = append(t.Rows, interruptedRow(rep)...)
	t.Rows = append(t.Rows,
		[]string{"faults", fmt.Sprintf("seed %d, finalized %d slots after confirmed", f.Seed, f.FinalizeSlots)},
		[]string{"run", fmt.Sprintf("%.0f s, then %.0f s to drain", f.DurationSeconds, f.DrainSeconds)},
		[]string{"games started / completed / skipped", fmt.Sprintf("%d / %d / %d (asked %d/min)", f.GamesStarted, f.GamesCompleted,
			f.GamesSkipped, f.GamesPerMinute)},
		[]string{"money movements started by clients", fmt.Sprintf("%d (asked %d/min)", f.Started, f.IntentsPerMinute)},
	)
	for _, k := range slices.Sorted(maps.Keys(f.Ended)) {
		t.Rows = append(t.Rows, []string{"  ended " + k, fmt.Sprint(f.Ended[k])})
	}
	t.Rows = append(t.Rows, []string{"time to final p50 / p90 / p99 / max", fmtLatency(f.TimeToFinal)})
	for _, k := range slices.Sorted(maps.Keys(f.ByKind)) {
		t.Rows = append(t.Rows, []string{"  " + k, fmtLatency(f.ByKind[k])})
	}
	t.Rows = append(t.Rows, []string{"recorded by the server, by final state"})
	for _, s := range f.ByState {
		t.Rows = append(t.Rows, []string{"  " + s.Kind + " " + s.State, fmt.Sprint(s.Count)})
	}
	t.Rows = append(t.Rows, []string{"not final at the end", fmt.Sprint(len(f.Unfinished))})
	for i, u := range f.Unfinished {
		if i == 5 {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("  ... %d more", len(f.Unfinished)-5)})
			break
		}
		t.Rows = append(t.Rows, []string{"  " + u})
	}
	t.Rows = append(t.Rows, []string{"RPC calls per recorded movement", fmt.Sprintf("%.1f (%d calls, %d movements)", f.RPC.PerMovement, f.RPC.Calls, f.RPC.Movements)})
	for _, m := range f.RPC.ByMethod {
		t.Rows = append(t.Rows, []string{"  " + m.Method, fmt.Sprintf("%.2f (%d)", m.PerMovement, m.Calls)})
	}
	x := f.RPC.Faults
	t.Rows = append(t.Rows, []string{"faults injected", fmt.Sprintf("dropped %d, 429 %d, 503 %d, timeout %d, lost answer %d, hidden %d",
		x.Dropped, x.TooMany, x.Unavailable, x.TimedOut, x.LostAnswers, x.Hidden)})
	t.Rows = append(t.Rows, []string{"fee per transaction (lamports) mean / p50 / max",
		fmt.Sprintf("%.0f / %d / %d (%d transactions, %d in all)", f.Fees.MeanLamports, f.Fees.P50Lamports, f.Fees.MaxLamports,
			f.Fees.Transactions, f.Fees.TotalLamports)})
	t.Rows = append(t.Rows, signInRows(rep.SignIn)...)
	t.Rows = append(t.Rows, errorRows(rep.Errors)...)
	return t
}
