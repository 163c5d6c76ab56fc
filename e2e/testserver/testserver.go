// Package testserver starts the whole server in-process for tests and
// benchmarks, on the calling package's test database.
package testserver

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"wager/cmd/server/app"
	"wager/db/dbtest"
	"wager/domain"
)

// MasterSeed is the key seed of every test server. A package's database
// (ledger, local chain) outlives one server, so every server of a package
// must hold the same keys.
const MasterSeed = "e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0e2e0"

// Server is the whole app, served over HTTP on a loopback port.
type Server struct {
	URL string // base URL, without a trailing slash
	App *app.App
}

// Start starts the app on the package's test database (dbtest; a fresh one
// when env runs demo bots) with env on top of the defaults; DATABASE_URL and DATA_DIR are the test's own. It is
// stopped when the test ends. Warnings and errors go to the test's output.
func Start(t testing.TB, env map[string]string) *Server {
	t.Helper()
	// Bots are known by name (demo_bot_N): a server with bots gets a
	// database of its own, or it would find another test's bots busy.
	return start(t, env, env["DEMO_BOTS"] != "", nil)
}

// StartClocked is Start with clock as the time of every service: a test
// moves it forward to skip the minutes before an arena starts or ends.
func StartClocked(t testing.TB, env map[string]string, clock domain.Clock) *Server {
	t.Helper()
	return start(t, env, env["DEMO_BOTS"] != "", clock)
}

// StartFresh is Start on a database of the test's own: for tests that
// change what every user of a database sees (feature flags, say).
func StartFresh(t testing.TB, env map[string]string) *Server {
	t.Helper()
	return start(t, env, true, nil)
}

func start(t testing.TB, env map[string]string, fresh bool, clock domain.Clock) *Server {
	t.Helper()
	dbURL, dataDir := dbtest.URL(t), t.TempDir()
	if fresh {
		dbURL = dbtest.Fresh(t)
	}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		switch k {
		case "DATABASE_URL":
			return dbURL
		case "DATA_DIR":
			return dataDir
		case "MASTER_SEED":
			return MasterSeed
		case "AUTH_RATE_LIMIT":
			return "0" // the tests sign in many wallets from one address
		}
		return ""
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = clock
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	hs := httptest.NewServer(a.Handler())
	t.Cleanup(hs.Close) // runs before app.Close
	if err := a.Listening(hs.URL); err != nil {
		t.Fatal(err)
	}
	return &Server{URL: hs.URL, App: a}
}

// Clock is the wall clock moved forward by what a test skips: games and
// bots run at their real pace, and the minutes before an arena starts or
// ends pass at once. Its Now is the clock to give StartClocked.
type Clock struct{ skip atomic.Int64 }

// Now is the wall clock plus what was skipped.
func (c *Clock) Now() time.Time { return time.Now().UTC().Add(time.Duration(c.skip.Load())) }

// AdvanceTo moves the clock to at, when that is ahead.
func (c *Clock) AdvanceTo(at time.Time) {
	if d := at.Sub(c.Now()); d > 0 {
		c.skip.Add(int64(d))
	}
}
