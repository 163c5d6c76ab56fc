package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"wager/domain"
)

// stallingStore's reads wait for their context and end a second (of the
// bubble's clock) after it is done, like a query the database is still
// cancelling: a hub that returns from Run before its goroutines ended
// leaves a read going on, which the clock cannot end while the test runs.
type stallingStore struct {
	busy atomic.Int32 // reads going on
}

func (s *stallingStore) stall(ctx context.Context) error {
	s.busy.Add(1)
	defer s.busy.Add(-1)
	<-ctx.Done()
	time.Sleep(time.Second)
	return ctx.Err()
}

func (s *stallingStore) Events(ctx context.Context, _ domain.Stream, _, _ int) ([]Event, error) {
	return nil, s.stall(ctx)
}

func (s *stallingStore) LastSeqs(ctx context.Context, _ domain.StreamKind, _ []string) (map[string]int, error) {
	return nil, s.stall(ctx)
}

// TestRunReturnsOnceNothingOfTheHubRuns: Run returns only after the
// pumps of game and tournament rooms and the sweep asked for ended, and
// once it returned, announcements and joins start no pump.
func TestRunReturnsOnceNothingOfTheHubRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // whatever a failing hub left going on ends before the bubble
		s := &stallingStore{}
		h := New(s, testPages{newMemStore()}, soloPresence{}, kinds(newMemStore(), testPages{newMemStore()}), "test", slog.New(slog.DiscardHandler), Options{SweepEvery: time.Hour, CrowdEvery: time.Hour, PresenceEvery: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan struct{})
		go func() { h.Run(ctx); close(ran) }()

		c := NewConn("u1", JSON)
		game, tour := domain.GameStreamOf("g"), domain.TournamentStreamOf("t")
		for _, st := range []domain.Stream{game, tour} {
			if err := h.Join(ctx, c, st, 0, 0, false, 0); err != nil {
				t.Fatal(err)
			}
		}
		h.Announced(game, 3)
		h.Announced(tour, 2)
		h.SweepNow()
		synctest.Wait()
		if n := s.busy.Load(); n != 3 {
			t.Fatalf("%d store reads wait, want the pumps' 2 and the sweep's", n)
		}
		cancel()
		<-ran
		if n := s.busy.Load(); n != 0 {
			t.Errorf("%d store reads were still going on after Run returned", n)
		}

		h.Announced(game, 5)
		h.Announced(tour, 4)
		late := NewConn("u2", JSON)
		if err := h.Join(context.Background(), late, domain.GameStreamOf("g2"), 0, 0, false, 0); err != nil {
			t.Fatal(err)
		}
		h.Announced(domain.GameStreamOf("g2"), 1)
		synctest.Wait()
		if n := s.busy.Load(); n != 0 {
			t.Fatalf("%d store reads started after Run returned", n)
		}
	})
}

// failingStore is a store that cannot be read.
type failingStore struct{ *memStore }

func (failingStore) Events(context.Context, domain.Stream, int, int) ([]Event, error) {
	return nil, errors.New("the database is down")
}

// TestAStoppingHubSleepsOutNoPause: a pump waiting to read again after
// failures, and the delivery of a notice to Everyone between two chunks
// of sockets, end their pause as the hub stops.
func TestAStoppingHubSleepsOutNoPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := failingStore{newMemStore()}
		h := New(s, testPages{s.memStore}, soloPresence{}, kinds(s.memStore, testPages{s.memStore}), "test",
			slog.New(slog.DiscardHandler), Options{SweepEvery: time.Hour, CrowdEvery: time.Hour, PresenceEvery: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan struct{})
		go func() { h.Run(ctx); close(ran) }()

		if err := h.Join(ctx, NewConn("u1", JSON), domain.GameStreamOf("g"), 0, 0, false, 0); err != nil {
			t.Fatal(err)
		}
		h.Announced(domain.GameStreamOf("g"), 3)
		time.Sleep(10 * time.Second) // the pump's pauses grew to their longest
		for i := range broadcastChunk + 1 {
			if !h.Register(NewConn(fmt.Sprintf("u%d", i/MaxSocketsPerUser), JSON)) {
				t.Fatal("register a socket")
			}
		}
		if !h.broadcast("activity", json.RawMessage(`{"id":1}`), nil) {
			t.Fatal("the notice to everyone was refused")
		}
		synctest.Wait() // the delivery pauses after the first chunk

		cancel()
		stopping := time.Now()
		<-ran
		if waited := time.Since(stopping); waited != 0 {
			t.Errorf("Run returned %v after it was told to stop, want at once", waited)
		}
	})
}
