package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"wager/domain"
	"wager/e2e/apiclient"
)

// fanout runs the fanout scenario: -games games, -spectators sockets
// spread evenly over them, -moves moves per game -think apart.
func (r *runner) fanout(ctx context.Context) error {
	cfg := r.cfg
	nGames, nSockets := cfg.Games, cfg.Spectators
	nWatchers := (nSockets + cfg.SocketsPerUser - 1) / cfg.SocketsPerUser
	res := &FanoutResult{Games: nGames, Sockets: nSockets, SpectatorUsers: nWatchers, MovesPerGame: cfg.Moves,
		ThinkMs: ms(cfg.Think)}
	r.report.Fanout = res

	clients, err := r.signIn(ctx, 2*nGames+nWatchers)
	if err != nil {
		return setupError("signing in", err)
	}
	players, watchers := clients[:2*nGames], clients[2*nGames:]

	games, starts, err := r.createGames(ctx, players, endless)
	if err != nil {
		return setupError("creating games", err)
	}
	res.GameStart = starts

	var before ServerMetrics
	if cfg.MetricsURL != "" {
		if before, err = scrapeMetrics(ctx, r.http, cfg.MetricsURL); err != nil {
			return setupError("reading the server's metrics", err)
		}
	}
	conn := r.connectSpectators(ctx, nSockets,
		func(i int) *apiclient.Client { return watchers[i/cfg.SocketsPerUser] },
		func(i int) *gameLog { return games[i%nGames] })
	defer closeSpectators(conn.specs)
	if len(conn.specs) == 0 {
		return setupError("connecting spectators", fmt.Errorf("no socket opened (see the errors: %v)", r.errs.All()))
	}
	res.Joined, res.ConnectSeconds, res.ConnectJoin = conn.joined, conn.seconds, conn.latency
	res.SocketsPerSec = float64(conn.joined) / conn.seconds
	if cfg.MetricsURL != "" {
		time.Sleep(time.Second) // let the server finish what the joins started
		after, err := scrapeMetrics(ctx, r.http, cfg.MetricsURL)
		if err != nil {
			r.errs.Add("reading metrics after the joins")
			r.progress("%v", err)
		} else {
			res.Memory = perSocket(before, after, conn.joined)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	r.progress("playing %d moves in each of %d games, %s apart", cfg.Moves, nGames, cfg.Think)
	var moveLat Recorder
	start := now()
	_ = forEach(ctx, nGames, nGames, func(ctx context.Context, i int) error {
		a, b, g := players[2*i], players[2*i+1], games[i]
		// Games start at different moments within one think time, so
		// that moves arrive as a stream rather than in waves.
		if !domain.Sleep(ctx, time.Duration(rand.Int64N(int64(cfg.Think)+1))) {
			return nil
		}
		for m := range cfg.Moves {
			p := a
			if m%2 == 1 {
				p = b
			}
			rec, _, err := act(ctx, p, g.id, move("rock"))
			if err != nil {
				r.errs.Add("move: " + errorKind(err))
			} else {
				g.add(rec)
				moveLat.Add(rec.end - rec.start)
			}
			if !domain.Sleep(ctx, cfg.Think) {
				return nil
			}
		}
		rec, _, err := act(ctx, a, g.id, resign)
		if err != nil {
			r.errs.Add("resign: " + errorKind(err))
			return nil
		}
		g.add(rec)
		moveLat.Add(rec.end - rec.start)
		return nil
	})
	elapsed := now() - start
	res.MovePOST = moveLat.Summary()
	res.Moves = res.MovePOST.Count
	res.MovesPerSec = float64(res.Moves) / elapsed.Seconds()

	post, cancel := afterRun()
	defer cancel()
	fetchLastSeqs(post, players[0], games, cfg.SetupConcurrency, r.errs)
	r.progress("moves done in %.1fs; waiting up to %s for spectators to catch up", elapsed.Seconds(), cfg.Drain)
	waitCaughtUp(post, conn.specs, cfg.Drain)
	res.Delivery = analyze(conn.specs, window{From: start})
	return nil
}

// createGames starts one free rps game per pair of players (players 2i
// and 2i+1) with settings s, at most -setup-concurrency at a time.
func (r *runner) createGames(ctx context.Context, players []*apiclient.Client, s rpsSettings) ([]*gameLog, Latency, error) {
	n := len(players) / 2
	games := make([]*gameLog, n)
	var lat Recorder
	r.progress("creating %d games", n)
	err := forEach(ctx, n, r.cfg.SetupConcurrency, func(ctx context.Context, i int) error {
		id, d, err := startGame(ctx, players[2*i], players[2*i+1], s)
		if err != nil {
			return fmt.Errorf("game %d: %w", i, err)
		}
		lat.Add(d)
		games[i] = newGameLog(id)
		return nil
	})
	if err != nil {
		return nil, Latency{}, err
	}
	return games, lat.Summary(), nil
}
