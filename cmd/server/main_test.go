package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wager/db"
	"wager/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// running is a server started by run, and how to stop it.
type running struct {
	addr, ops string // its listener's and its operations listener's addresses
	stop      func() error
}

// start runs the server with env on the package's database until the test
// ends (or stop is called).
func start(t *testing.T, env map[string]string) running {
	t.Helper()
	all := map[string]string{"ADDR": "127.0.0.1:0", "METRICS_ADDR": "127.0.0.1:0", "DATABASE_URL": dbtest.URL(t),
		"DATA_DIR": t.TempDir()}
	for k, v := range env {
		all[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	out, logw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"server"}, func(k string) string { return all[k] }, logw) }()

	var r running
	lines := bufio.NewScanner(out)
	listening := regexp.MustCompile(`msg=listening addr=(\S+)`)
	opsListening := regexp.MustCompile(`msg="operations listening \(metrics, profiler\)" addr=(\S+)`)
	for r.addr == "" && lines.Scan() {
		if m := opsListening.FindStringSubmatch(lines.Text()); m != nil {
			r.ops = m[1]
		}
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			r.addr = m[1]
		}
	}
	go io.Copy(io.Discard, out)
	if r.addr == "" {
		cancel()
		t.Fatalf("server never logged its address: %v", <-done)
	}
	stopped := false
	r.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("the server did not stop within 10 seconds")
		}
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func TestRunServesAndStopsCleanly(t *testing.T) {
	srv := start(t, nil)
	addr, ops := srv.addr, srv.ops
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("/health: got %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		resp, err := http.Get("http://" + ops + path)
		if err != nil {
			t.Fatalf("the operations listener (%q): %v", ops, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s on the operations listener: %d", path, resp.StatusCode)
		}
	}

	if resp, err := http.Get("http://" + addr + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the public listener: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	if err := srv.stop(); err != nil {
		t.Fatalf("run after stop: %v", err)
	}
}

func TestRunRefusesInvalidConfigurationNamingTheVariable(t *testing.T) {
	env := map[string]string{"ABUSE_WINDOW": "soon", "MIN_SDK_VERSION": "one"}
	err := run(context.Background(), []string{"server"}, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ABUSE_WINDOW") || !strings.Contains(err.Error(), "MIN_SDK_VERSION") {
		t.Fatalf("got %v, want an error naming ABUSE_WINDOW and MIN_SDK_VERSION", err)
	}
}

func TestIdleConnectionsFromOneClientLeaveHealthAnswering(t *testing.T) {
	srv := start(t, map[string]string{"MAX_CONNS_PER_IP": "1000"})

	// One client (127.0.0.1) opens 5000 connections and sends nothing.
	const flood = 5000
	conns := make([]net.Conn, 0, flood)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range flood {
		c, err := net.Dial("tcp", srv.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}

	// Another client (127.0.0.2) gets its answer at once.
	other := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	resp, err := other.Get("http://" + srv.addr + "/health")
	if err != nil {
		t.Fatalf("/health from another client during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/health from another client during the flood: %d", resp.StatusCode)
	}

	// The server holds 1000 of the flood's connections and closed the
	// rest; the ones it holds close when no request header came in 10 s.
	closedBy := func(within time.Duration) (closed int) {
		var wg sync.WaitGroup
		var n atomic.Int64
		deadline := time.Now().Add(within)
		for _, c := range conns {
			wg.Go(func() {
				c.SetReadDeadline(deadline)
				if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return int(n.Load())
	}
	if closed := closedBy(2 * time.Second); closed != flood-1000 {
		t.Errorf("the server closed %d of %d connections from one client, want all but 1000", closed, flood)
	}
	if closed := closedBy(12 * time.Second); closed != flood {
		t.Errorf("%d of %d connections closed after 12 s without a request, want all", closed, flood)
	}
}

// A server listening on every interface tells its demo bots to reach it on
// loopback: they sign in through its API (the wallet login makes their
// users) and are marked as bots.
func TestRunGivesTheBotsItsAddress(t *testing.T) {
	dbURL := dbtest.Fresh(t)
	start(t, map[string]string{"ADDR": ":0", "DEMO_BOTS": "1", "DATABASE_URL": dbURL})
	bdb, err := db.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bdb.Close() })
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var n int
		err := bdb.NewRaw(`SELECT count(*) FROM users AS u JOIN auth_challenges AS c ON c.wallet_address = u.wallet_address
			WHERE u.bot AND c.app_id = 'demo-bots' AND c.consumed_at IS NOT NULL`).Scan(context.Background(), &n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the demo bot never signed in through the API")
		}
	}
}
