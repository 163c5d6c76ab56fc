package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"wager/e2e/apiclient"
)

// readTurns is how many turns the project and the bare reference take
// at an endpoint, each for a slice of -duration.
const readTurns = 5

// readTarget is one endpoint of one server under read load.
type readTarget struct {
	endpoint string // as reported, e.g. "GET /games/:id"
	server   string // project or bare
	client   *apiclient.Client
	path     func() string
	cpu      func() time.Duration // the server's CPU time so far; always 0 when not measured
}

// reads runs the reads scenario: -live-games active games, then each read
// endpoint alone at -concurrency for -duration, on the project and on the
// bare reference in turns.
func (r *runner) reads(ctx context.Context) error {
	cfg := r.cfg
	clients, err := r.signIn(ctx, 2*cfg.LiveGames+1)
	if err != nil {
		return setupError("signing in", err)
	}
	players, reader := clients[:2*cfg.LiveGames], clients[2*cfg.LiveGames]
	games, _, err := r.createGames(ctx, players, endless)
	if err != nil {
		return setupError("creating games", err)
	}
	post, cancel := afterRun()
	defer cancel()
	defer func() {
		seats := make([]seat, len(games))
		for i, g := range games {
			seats[i] = seat{gameID: g.id, player: players[2*i]}
		}
		r.progress("resigning the %d live games", len(games))
		resignAll(post, seats, cfg.SetupConcurrency)
	}()
	stopAlive := make(chan struct{})
	var alive sync.WaitGroup
	alive.Go(func() { r.keepAlive(ctx, stopAlive, players, games) })
	defer func() { close(stopAlive); alive.Wait() }() // before the resigns

	endpoints, closeBare, err := r.readTargets(reader, games)
	if err != nil {
		return err
	}
	defer closeBare()

	res := &ReadsResult{LiveGames: len(games), Concurrency: cfg.Concurrency, DurationSeconds: cfg.Duration.Seconds()}
	r.report.Reads = res
	for _, targets := range endpoints {
		if ctx.Err() != nil {
			break
		}
		res.Endpoints = append(res.Endpoints, r.measureReads(ctx, targets)...)
	}
	compareWithBare(res.Endpoints)
	return nil
}

// readTargets returns each read endpoint's targets: the project, then the
// bare reference when -bare starts one (closeBare stops it), each with its
// CPU meter when -cpu measures it.
func (r *runner) readTargets(reader *apiclient.Client, games []*gameLog) (endpoints [][]readTarget, closeBare func(), err error) {
	cfg := r.cfg
	closeBare = func() {}
	// The read load has its own connection pool, one connection per
	// worker and server.
	hc := newHTTPClient(r.dial, cfg.Concurrency, cfg.Timeout)
	anon := *reader
	anon.Token, anon.HTTP = "", hc
	bearer := *reader
	bearer.HTTP = hc
	randomGame := func() string { return games[rand.IntN(len(games))].id }
	live := func() string { return "/games/live" }
	detail := func() string { return "/games/" + randomGame() }
	state := func() string { return "/games/" + randomGame() + "/state" }
	// The project's CPU is its server's and, when on this machine,
	// PostgreSQL's; the bare reference's, its own process's.
	unmeasured := func() time.Duration { return 0 }
	projectCPU, bareCPU := unmeasured, unmeasured
	if cfg.CPU {
		meter, err := newCPUMeter(cfg.URL, cfg.ServerPID, true, cfg.PgDatabase)
		if err != nil {
			r.progress("not measuring CPU: %v", err)
		}
		if meter != nil {
			projectCPU = func() time.Duration { s := meter.sample(); return s.Server + s.Postgres }
		}
	}
	var bc apiclient.Client
	if cfg.Bare {
		bare, err := startBare()
		if err != nil {
			return nil, nil, setupError("starting the bare reference server", err)
		}
		closeBare = func() { bare.Close() }
		bc = anon
		bc.BaseURL = bare.URL
		if cfg.CPU {
			bareCPU = bare.CPU
		}
	}
	// Each endpoint's targets: the project, then the bare reference when
	// there is one.
	for _, e := range []struct {
		name   string
		client *apiclient.Client
		path   func() string
		bare   bool
	}{
		{"GET /games/live", &anon, live, true},
		{"GET /games/:id", &anon, detail, true},
		{"GET /games/:id/state", &bearer, state, false},
	} {
		targets := []readTarget{{e.name, "project", e.client, e.path, projectCPU}}
		if e.bare && cfg.Bare {
			targets = append(targets, readTarget{e.name, "bare", &bc, e.path, bareCPU})
		}
		endpoints = append(endpoints, targets)
	}
	return endpoints, closeBare, nil
}

// measureReads loads an endpoint's targets in turns after a warm-up, and
// returns a row for each.
func (r *runner) measureReads(ctx context.Context, targets []readTarget) []EndpointResult {
	cfg := r.cfg
	// The project and the bare reference take turns in slices of the
	// measured time, so that both see the machine as it is in the
	// same seconds: measured one after the other, the bare row's
	// rate moved between runs by more than the gap being measured.
	turns := readTurns
	if len(targets) == 1 {
		turns = 1
	}
	r.progress("%s: warming up %s, measuring %s on each of %d servers in %d turns", targets[0].endpoint, cfg.Warmup, cfg.Duration,
		len(targets), turns)
	for _, t := range targets {
		r.readLoad(ctx, t, cfg.Warmup, nil)
	}
	lats := make([][]time.Duration, len(targets))
	elapsed := make([]time.Duration, len(targets))
	cpu := make([]time.Duration, len(targets))
	errs := make([]Errors, len(targets))
	for range turns {
		for i, t := range targets {
			before := t.cpu()
			lat, took := r.readLoad(ctx, t, cfg.Duration/time.Duration(turns), &errs[i])
			cpu[i] += t.cpu() - before
			lats[i] = append(lats[i], lat...)
			elapsed[i] += took
		}
	}
	var rows []EndpointResult
	for i, t := range targets {
		e := EndpointResult{Endpoint: t.endpoint, Server: t.server, Requests: len(lats[i]),
			PerSecond: float64(len(lats[i])) / elapsed[i].Seconds(), Latency: Summarize(lats[i]), Errors: errs[i].All()}
		if cpu[i] > 0 && len(lats[i]) > 0 {
			e.CPUPerRequestUs = float64(cpu[i].Microseconds()) / float64(len(lats[i]))
		}
		e.ErrorsTotal = totalErrors(e.Errors)
		for _, c := range e.Errors {
			r.errs.addN(fmt.Sprintf("%s (%s): %s", t.endpoint, t.server, c.Kind), c.Count)
		}
		rows = append(rows, e)
		r.progress("%s (%s): %.0f req/s, p99 %s, %d errors", t.endpoint, t.server, e.PerSecond, fmtMs(e.Latency.P99Ms), e.ErrorsTotal)
	}
	return rows
}

// compareWithBare sets each project row's ratios to the bare row of the
// same endpoint, when there is one.
func compareWithBare(rows []EndpointResult) {
	for i := range rows {
		if rows[i].Server != "project" {
			continue
		}
		j := slices.IndexFunc(rows, func(b EndpointResult) bool { return b.Server == "bare" && b.Endpoint == rows[i].Endpoint })
		if j < 0 {
			continue
		}
		b := rows[j]
		if b.PerSecond > 0 {
			v := rows[i].PerSecond / b.PerSecond
			rows[i].RateVsBare = &v
		}
		if b.Latency.P99Ms > 0 {
			v := rows[i].Latency.P99Ms / b.Latency.P99Ms
			rows[i].P99VsBare = &v
		}
		if b.CPUPerRequestUs > 0 && rows[i].CPUPerRequestUs > 0 {
			v := rows[i].CPUPerRequestUs / b.CPUPerRequestUs
			rows[i].CPUVsBare = &v
		}
	}
}

// readLoad sends GETs of t from -concurrency workers for d and returns the
// latencies of the successful ones and the time the load took. Workers
// start no request after d but let those in flight finish: cancelling
// them would make the server fail requests nobody waits for. Errors go to
// errs (nil: not counted, as in a warm-up).
func (r *runner) readLoad(ctx context.Context, t readTarget, d time.Duration, errs *Errors) ([]time.Duration, time.Duration) {
	if d <= 0 {
		return nil, 0
	}
	var mu sync.Mutex
	var all []time.Duration
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Go(func() {
			var mine []time.Duration
			for ctx.Err() == nil && time.Now().Before(end) {
				t0 := time.Now()
				err := t.client.Do(ctx, http.MethodGet, t.path(), nil, nil)
				took := time.Since(t0)
				switch {
				case err == nil:
					mine = append(mine, took)
				case ctx.Err() != nil: // interrupted
				case errs != nil:
					errs.Add(errorKind(err))
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, time.Since(start)
}

// keepAlive stops the live games' round timers from ending them until
// stop closes: every half round, both players of each game choose rock, a
// draw that starts a new round.
func (r *runner) keepAlive(ctx context.Context, stop <-chan struct{}, players []*apiclient.Client, games []*gameLog) {
	every := time.Duration(endless.RoundSeconds) * time.Second / 2
	for {
		t := time.NewTimer(every)
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
		r.progress("keeping %d live games going", len(games))
		_ = forEach(ctx, len(games), r.cfg.SetupConcurrency, func(ctx context.Context, i int) error {
			for _, p := range players[2*i : 2*i+2] {
				if _, _, err := act(ctx, p, games[i].id, move("rock")); err != nil && ctx.Err() == nil {
					r.errs.Add("keep-alive move: " + errorKind(err))
				}
			}
			return nil
		})
	}
}
