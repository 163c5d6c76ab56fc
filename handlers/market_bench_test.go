package handlers_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wager/db"

	"github.com/uptrace/bun"
)

// BenchmarkMarketOrdersOverHTTP measures orders of 16 concurrent clients,
// each its own signed-in trader, into one market over a real HTTP
// listener: buys and sells of both outcomes priced around the middle (about
// half of them cross: transfers, mints and merges), a fifth IOC. It reports
// orders/s over the whole run and the p50 and p99 latency of one order.
// Run it with a fixed count, e.g. -benchtime=2000x.
func BenchmarkMarketOrdersOverHTTP(b *testing.B) {
	clients := 16
	if n, err := strconv.Atoi(os.Getenv("MARKET_BENCH_CLIENTS")); err == nil && n > 0 {
		clients = n // e.g. 1: the latency of an order nobody waits behind
	}
	env := map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ABUSE_THRESHOLD": "100000000", "POOL_CAP_MULTIPLE": "1000"}
	a := newTestApp(b, env)
	// A 10 USDC stake: the market may hold 20,000 pairs (POOL_CAP_MULTIPLE
	// 1000), the traders' seeds and every pair the run may mint.
	p1, p2, game := a.stakedGame(b, 10_000_000, `{"rounds": 1}`)
	outcomes := [2]string{p1.id, p2.id}
	traders := make([]player, clients)
	for i := range traders {
		traders[i] = a.depositor(b, 1_000_000_000)
		// Each trader mints itself 300 pairs at 0.50, so that it has
		// shares of both outcomes to sell.
		a.placed(b, traders[i], game, "buy", outcomes[0], 500_000, 300, "")
		if p := a.placed(b, traders[i], game, "buy", outcomes[1], 500_000, 300, ""); p.Order.Status != "filled" {
			b.Fatalf("seeding the trader's shares: %+v", p)
		}
	}
	var timer *statementTimer
	if os.Getenv("MARKET_BENCH_STATEMENTS") != "" {
		timer = &statementTimer{byQuery: map[string]*statementTime{}}
		db.AddQueryHook(a.DB, timer)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}

	var (
		next      atomic.Int64
		latencies = make([]time.Duration, b.N)
		failed    atomic.Int64
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), uint64(b.N)))
			// Shares it may still offer: only its own sells lock or take
			// its shares, so this never exceeds what it holds free.
			free := [2]int64{300, 300}
			for {
				n := next.Add(1) - 1
				if n >= int64(b.N) {
					return
				}
				o := r.IntN(2)
				side := "buy"
				price := 400_000 + r.Int64N(21)*10_000
				shares := 1 + r.Int64N(10)
				if r.IntN(2) == 0 && free[o] >= shares {
					side, free[o] = "sell", free[o]-shares
				}
				tif := ""
				if r.IntN(5) == 0 {
					tif = "IOC"
				}
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/games/"+game+"/market/orders/"+side,
					strings.NewReader(orderBody(outcomes[o], price, shares, tif)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-SDK-Version", "1.0.0")
				for k, v := range traders[c].auth {
					req.Header.Set(k, v)
				}
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					b.Errorf("%s: %v", side, err)
					continue
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				latencies[n] = time.Since(t0)
				if res.StatusCode != http.StatusCreated {
					failed.Add(1)
					b.Errorf("%s %d of %s at %d: %d %s", side, shares, outcomes[o], price, res.StatusCode, body)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
	if b.N >= 100 {
		stats := map[string]int{}
		a.tradeKinds(b, game, stats)
		b.Logf("%d orders, %d failed, in %v: trades %v", b.N, failed.Load(), elapsed.Round(time.Millisecond), fmt.Sprint(stats))
		if timer != nil {
			fmt.Fprint(os.Stderr, timer.report(b.N)) // b.Log would cut it short
		}
	}
}

// statementTimer sums the time of the statements bun sends, by their text
// up to the first value, to tell which statements of an order cost most
// (MARKET_BENCH_STATEMENTS=1). The time is the client's: a statement that
// waits for a lock counts its wait.
type statementTimer struct {
	mu      sync.Mutex
	byQuery map[string]*statementTime
}

type statementTime struct {
	n     int
	total time.Duration
}

func (s *statementTimer) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (s *statementTimer) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q := strings.Join(strings.Fields(e.Query), " ")
	if i := strings.IndexAny(q, "'$0123456789"); i > 0 {
		q = q[:i]
	}
	q = q[:min(len(q), 110)]
	d := time.Since(e.StartTime)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.byQuery[q]
	if st == nil {
		st = &statementTime{}
		s.byQuery[q] = st
	}
	st.n++
	st.total += d
}

func (s *statementTimer) report(orders int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := slices.SortedFunc(maps.Keys(s.byQuery), func(x, y string) int { return cmp.Compare(s.byQuery[y].total, s.byQuery[x].total) })
	var out strings.Builder
	fmt.Fprintf(&out, "statements by total client time (per order):\n")
	for _, k := range keys[:min(len(keys), 25)] {
		st := s.byQuery[k]
		fmt.Fprintf(&out, "%8.2f ms/order %6.2f calls/order %7.2f ms/call  %s\n", float64(st.total.Microseconds())/1000/float64(orders),
			float64(st.n)/float64(orders), float64(st.total.Microseconds())/1000/float64(st.n), k)
	}
	return out.String()
}
