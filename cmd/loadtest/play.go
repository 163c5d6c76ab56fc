package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"wager/domain"
	"wager/e2e/apiclient"
)

// table is a pair of bots playing game after game, and the sockets that
// follow whatever game the pair is playing.
type table struct {
	a, b  *apiclient.Client
	specs []*spectator

	mu      sync.Mutex
	current *gameLog // in progress; nil between games
}

func (t *table) setCurrent(g *gameLog) {
	t.mu.Lock()
	t.current = g
	t.mu.Unlock()
}

// startRecord is one game start: when it ended and how long it took.
type startRecord struct{ at, took time.Duration }

// playEngine runs the tables of the play scenario.
type playEngine struct {
	r        *runner
	settings rpsSettings
	jitter   float64
	think    atomic.Int64 // nanoseconds between a player's moves
	stop     chan struct{}

	mu        sync.Mutex
	games     []*gameLog
	starts    []startRecord
	completed int
}

var choices = []string{"rock", "paper", "scissors"}

// moveOutcome is what a player's random move came to.
type moveOutcome int

const (
	moveAnswered    moveOutcome = iota // the server took it (rec and ans tell more)
	moveCancelled                      // the run ended first
	moveGameOver                       // GAME_NOT_ACTIVE: the game had ended
	moveAlreadyMade                    // ALREADY_MOVED: the player's move of the round stands
	moveFailed                         // any other failure: move again
)

// randomMove plays a random choice for c in the game; failures are
// counted in the run's errors.
func (r *runner) randomMove(ctx context.Context, c *apiclient.Client, gameID string) (actionRecord, actionAnswer, moveOutcome) {
	rec, ans, err := act(ctx, c, gameID, move(choices[rand.IntN(len(choices))]))
	if err == nil {
		return rec, ans, moveAnswered
	}
	if ctx.Err() != nil {
		return rec, ans, moveCancelled
	}
	r.errs.Add("move: " + errorKind(err))
	var ae *apiclient.Error
	switch {
	case errors.As(err, &ae) && ae.Code == "GAME_NOT_ACTIVE":
		return rec, ans, moveGameOver
	case errors.As(err, &ae) && ae.Code == "ALREADY_MOVED":
		return rec, ans, moveAlreadyMade
	}
	return rec, ans, moveFailed
}

// stopped reports whether the run is over.
func (e *playEngine) stopped(ctx context.Context) bool {
	select {
	case <-e.stop:
		return true
	default:
		return ctx.Err() != nil
	}
}

// pause waits d, or less when the run ends; it reports whether d passed.
func (e *playEngine) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// thinkTime is the current think time, varied by up to ±jitter.
func (e *playEngine) thinkTime() time.Duration {
	base := float64(e.think.Load())
	return time.Duration(base * (1 + e.jitter*(2*rand.Float64()-1)))
}

// runTable plays games at one table until the run ends.
func (e *playEngine) runTable(ctx context.Context, t *table) {
	for !e.stopped(ctx) {
		id, took, err := startGame(ctx, t.a, t.b, e.settings)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.r.errs.Add("start game: " + errorKind(err))
			freePlayers(ctx, t.a, t.b)
			e.pause(ctx, e.thinkTime())
			continue
		}
		g := newGameLog(id)
		e.mu.Lock()
		e.games = append(e.games, g)
		e.starts = append(e.starts, startRecord{at: now(), took: took})
		e.mu.Unlock()
		t.setCurrent(g)
		for _, s := range t.specs {
			s.join(g)
		}
		if e.playGame(ctx, t, g) {
			t.setCurrent(nil)
			e.mu.Lock()
			e.completed++
			e.mu.Unlock()
		}
	}
}

// playGame plays rounds until the game ends (true) or the run does. Each
// player thinks, then chooses at random; a player whose move failed
// moves again in the same round.
func (e *playEngine) playGame(ctx context.Context, t *table, g *gameLog) bool {
	pending := []*apiclient.Client{t.a, t.b}
	for !e.stopped(ctx) {
		var wg sync.WaitGroup
		var over atomic.Bool
		var mu sync.Mutex
		var retry []*apiclient.Client
		for _, p := range pending {
			wg.Go(func() {
				if !e.pause(ctx, e.thinkTime()) {
					return
				}
				rec, ans, outcome := e.r.randomMove(ctx, p, g.id)
				switch outcome {
				case moveAnswered:
					g.add(rec)
					if ans.Status != "active" {
						over.Store(true)
					}
				case moveGameOver:
					over.Store(true)
				case moveFailed:
					mu.Lock()
					retry = append(retry, p)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if over.Load() {
			return true
		}
		pending = retry
		if len(pending) == 0 {
			pending = []*apiclient.Client{t.a, t.b}
		}
	}
	return false
}

// windowStats are the moves and game starts of a window.
func (e *playEngine) windowStats(w window) (moves int, post, starts Latency) {
	e.mu.Lock()
	games := slices.Clone(e.games)
	var st []time.Duration
	for _, s := range e.starts {
		if w.contains(s.at) {
			st = append(st, s.took)
		}
	}
	e.mu.Unlock()
	var lat []time.Duration
	for _, g := range games {
		acts, _ := g.snapshot()
		for _, a := range acts {
			if w.contains(a.end) {
				lat = append(lat, a.end-a.start)
			}
		}
	}
	return len(lat), Summarize(lat), Summarize(st)
}

// rampFactors divide the think time step by step.
var rampFactors = []float64{1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}

// play runs the play scenario.
func (r *runner) play(ctx context.Context) error {
	cfg := r.cfg
	nSockets := cfg.Games * cfg.SpectatorsPerGame
	nWatchers := (nSockets + cfg.SocketsPerUser - 1) / cfg.SocketsPerUser
	res := &PlayResult{Games: cfg.Games, SpectatorsPerGame: cfg.SpectatorsPerGame, Sockets: nSockets, ThinkMs: ms(cfg.Think)}
	r.report.Play = res

	clients, err := r.signIn(ctx, 2*cfg.Games+nWatchers)
	if err != nil {
		return setupError("signing in", err)
	}
	players, watchers := clients[:2*cfg.Games], clients[2*cfg.Games:]
	conn := r.connectSpectators(ctx, nSockets,
		func(i int) *apiclient.Client { return watchers[i/cfg.SocketsPerUser] },
		func(int) *gameLog { return nil })
	defer closeSpectators(conn.specs)
	if nSockets > 0 && len(conn.specs) == 0 {
		return setupError("connecting spectators", errors.New("no socket opened"))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	e := &playEngine{r: r, settings: rpsSettings{Rounds: cfg.Rounds, RoundSeconds: cfg.RoundSeconds},
		jitter: cfg.Jitter, stop: make(chan struct{})}
	e.think.Store(int64(cfg.Think))
	tables := make([]*table, cfg.Games)
	for i := range tables {
		tables[i] = &table{a: players[2*i], b: players[2*i+1]}
	}
	for i, s := range conn.specs { // sockets are spread evenly over the tables
		t := tables[i%len(tables)]
		t.specs = append(t.specs, s)
	}

	var meter *cpuMeter
	if cfg.CPU {
		if meter, err = newCPUMeter(cfg.URL, cfg.ServerPID, true, cfg.PgDatabase); err != nil {
			r.progress("not measuring CPU: %v", err)
		}
	}
	r.progress("%d tables playing, think %s", len(tables), cfg.Think)
	start := now()
	// The CPU and the games completed are read when the measured span
	// starts (after the warm-up) and when it ends.
	type mark struct {
		cpu       cpuSample
		completed int
	}
	marked := make(chan mark, 1)
	markNow := func() mark {
		e.mu.Lock()
		defer e.mu.Unlock()
		return mark{cpu: meter.sample(), completed: e.completed}
	}
	go func() {
		select {
		case <-time.After(cfg.Warmup):
		case <-e.stop:
		}
		marked <- markNow()
	}()
	var wg sync.WaitGroup
	for _, t := range tables {
		wg.Go(func() { e.runTable(ctx, t) })
	}
	if cfg.FindMax {
		res.Ramp = r.ramp(ctx, e, conn.specs)
	} else {
		domain.Sleep(ctx, cfg.Duration)
	}
	last := markNow()
	close(e.stop)
	end := now()
	first := <-marked
	r.progress("stopping: waiting for moves in flight")
	wg.Wait()

	w := window{From: min(start+cfg.Warmup, end), To: end}
	res.DurationSeconds = (end - w.From).Seconds()
	res.Moves, res.MovePOST, res.GameStart = e.windowStats(w)
	res.MovesPerSec = float64(res.Moves) / res.DurationSeconds
	if meter != nil && !cfg.FindMax {
		res.CPU = cpuUse(first.cpu, last.cpu, res.Moves, last.completed-first.completed)
	}
	e.mu.Lock()
	res.GamesStarted, res.GamesCompleted = len(e.games), e.completed
	games := slices.Clone(e.games)
	e.mu.Unlock()

	post, cancel := afterRun()
	defer cancel()
	r.progress("reading the final position of %d games", len(games))
	fetchLastSeqs(post, players[0], games, cfg.SetupConcurrency, r.errs)
	r.progress("waiting up to %s for spectators to catch up", cfg.Drain)
	waitCaughtUp(post, conn.specs, cfg.Drain)
	res.Delivery = analyze(conn.specs, w)

	var active []seat
	for _, t := range tables {
		t.mu.Lock()
		if t.current != nil {
			active = append(active, seat{gameID: t.current.id, player: t.a})
		}
		t.mu.Unlock()
	}
	r.progress("resigning %d games still in progress", len(active))
	resignAll(post, active, cfg.SetupConcurrency)
	return nil
}

// ramp raises the move rate step by step (the think time divided by
// rampFactors) until a step's delivery p99 passes the limit or it has
// errors, and returns the steps.
func (r *runner) ramp(ctx context.Context, e *playEngine, specs []*spectator) *Ramp {
	cfg := r.cfg
	out := &Ramp{P99LimitMs: ms(cfg.P99Limit), StepSeconds: cfg.Step.Seconds()}
	settle := min(2*time.Second, cfg.Step/4)
	for i, f := range rampFactors {
		if i == cfg.MaxSteps || ctx.Err() != nil {
			break
		}
		think := time.Duration(float64(cfg.Think) / f).Round(time.Millisecond)
		e.think.Store(int64(think))
		r.progress("ramp step %d: think %s", i+1, think)
		w := window{From: now()}
		if !domain.Sleep(ctx, cfg.Step) {
			break
		}
		w.To = now()
		domain.Sleep(ctx, settle) // deliveries of the step's last moves
		moves, post, _ := e.windowStats(w)
		d := analyze(specs, w)
		step := RampStep{ThinkMs: ms(think), MovesPerSec: float64(moves) / (w.To - w.From).Seconds(), MovePOST: post,
			Delivery: d.Latency, Errors: r.errs.Between(w)}
		step.Passed = d.Latency.P99Ms <= out.P99LimitMs && totalErrors(step.Errors) == 0 && moves > 0
		out.Steps = append(out.Steps, step)
		r.progress("ramp step %d: %.1f moves/s, delivery p99 %s, %d errors", i+1, step.MovesPerSec,
			fmtMs(d.Latency.P99Ms), totalErrors(step.Errors))
		if !step.Passed {
			out.LimitReached = true
			break
		}
		out.MaxSustainableRate = step.MovesPerSec
	}
	return out
}
