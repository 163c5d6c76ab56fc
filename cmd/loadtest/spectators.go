package main

import (
	"context"
	"sync/atomic"
	"time"

	"wager/e2e/apiclient"
)

// connected is the outcome of opening a set of spectator sockets.
type connected struct {
	specs   []*spectator // the sockets that opened
	joined  int          // of those, joined to their first game
	latency Latency      // per socket: dial to its joined frame
	seconds float64      // first dial to last joined frame
}

// connectSpectators opens n sockets, at most -dial-concurrency at a time:
// socket i belongs to userOf(i) and joins gameOf(i) (nil: none). Sockets
// live until ctx ends or they are closed. A socket that cannot connect is
// counted as an error, not a setup failure.
func (r *runner) connectSpectators(ctx context.Context, n int, userOf func(int) *apiclient.Client, gameOf func(int) *gameLog) connected {
	specs := make([]*spectator, n)
	var joined atomic.Int64
	var lat Recorder
	start := now()
	r.progress("connecting %d spectator sockets", n)
	_ = forEach(ctx, n, r.cfg.DialConcurrency, func(_ context.Context, i int) error {
		s := newSpectator(r, userOf(i))
		t := now()
		if err := s.connect(ctx); err != nil {
			r.errs.Add("ws connect: " + errorKind(err))
			return nil
		}
		specs[i] = s
		g := gameOf(i)
		if g == nil {
			return nil
		}
		m := s.join(g)
		timer := time.NewTimer(r.cfg.Timeout)
		defer timer.Stop()
		select {
		case <-m.joinedCh:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
		s.mu.Lock()
		ok := m.joinSeq >= 0
		s.mu.Unlock()
		if ok {
			lat.Add(now() - t)
			joined.Add(1)
		}
		return nil
	})
	out := connected{joined: int(joined.Load()), latency: lat.Summary(), seconds: (now() - start).Seconds()}
	for _, s := range specs {
		if s != nil {
			out.specs = append(out.specs, s)
		}
	}
	r.progress("%d of %d sockets open, %d joined, in %.1fs", len(out.specs), n, out.joined, out.seconds)
	return out
}

// waitCaughtUp waits until every joined socket has received its games up
// to their last known seq, or for at most d. It reports whether they did.
func waitCaughtUp(ctx context.Context, specs []*spectator, d time.Duration) bool {
	deadline := time.Now().Add(d)
	last := map[*gameLog]int{}
	for {
		behind := false
		for _, s := range specs {
			s.mu.Lock()
			for _, m := range s.order {
				if m.joinSeq < 0 {
					continue
				}
				l, ok := last[m.game]
				if !ok {
					_, l = m.game.snapshot()
					last[m.game] = l
				}
				if m.contig < l {
					behind = true
					break
				}
			}
			s.mu.Unlock()
			if behind {
				break
			}
		}
		if !behind {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
		clear(last)
	}
}

// closeSpectators closes every socket.
func closeSpectators(specs []*spectator) {
	_ = forEach(context.Background(), len(specs), 256, func(_ context.Context, i int) error {
		specs[i].close()
		return nil
	})
}
