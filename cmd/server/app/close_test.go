package app_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/google/uuid"

	"wager/cmd/server/app"
	"wager/db/dbtest"
	"wager/domain"
	"wager/web/live"
)

// Close returns once nothing the app started runs any more: the live hub
// with its rooms' pumps and sweeps, the workers and resolvers (with the
// pruning of abuse counters), the database listener. A room is told of
// events the database does not have, so that its pump reads again and
// again, pausing longer each time: Close comes during a long pause.
func TestCloseLeavesNothingOfTheAppRunning(t *testing.T) {
	before := projectGoroutines()
	misses := make(chan struct{}, 100)
	log := slog.New(&noticing{Handler: slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}),
		msg: "live: read missed events", seen: misses})
	env := map[string]string{"DATABASE_URL": dbtest.Fresh(t), "DATA_DIR": t.TempDir()}
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	game := uuid.NewString()
	if err := a.Live.Join(context.Background(), live.NewConn("u1", live.JSON), domain.GameStreamOf(game), 0, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	a.Live.Announced(domain.GameStreamOf(game), 3)
	for range 6 { // the pauses grew to 1.6 s
		<-misses
	}
	a.Close()
	for id, stack := range projectGoroutines() {
		if _, ok := before[id]; !ok {
			t.Errorf("a goroutine of the app runs after Close:\n%s", stack)
		}
	}
}

// noticing is a log handler that tells seen of each record of msg.
type noticing struct {
	slog.Handler
	msg  string
	seen chan<- struct{}
}

func (h *noticing) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

// projectGoroutines returns the stacks of the goroutines that run the
// project's code, by their header line, but the caller's.
func projectGoroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for i, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(g, " [") // "goroutine 7"
		if i > 0 && strings.Contains(g, "\nwager/") {
			out[id] = g
		}
	}
	return out
}
