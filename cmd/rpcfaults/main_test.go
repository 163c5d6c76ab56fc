package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

// output is stdout that a test reads while run writes.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}
func (o *output) String() string { o.mu.Lock(); defer o.mu.Unlock(); return o.buf.String() }

// start runs the command with flags in front of a node that answers
// getHealth, and returns the proxy's URL, its output and how to stop it
// (which returns run's error).
func start(t *testing.T, flags ...string) (string, *output, func() error) {
	t.Helper()
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"jsonrpc":"2.0","result":"ok","id":1}`)
	}))
	t.Cleanup(node.Close)
	ctx, cancel := context.WithCancel(context.Background())
	out := &output{}
	done := make(chan error, 1)
	args := append([]string{"rpcfaults", "-target", node.URL, "-listen", "127.0.0.1:0"}, flags...)
	go func() { done <- run(ctx, args, out) }()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			return errors.New("run did not return within 10s of being stopped")
		}
	})
	t.Cleanup(func() { stop() })
	listening := regexp.MustCompile(`listening on (\S+),`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			return "http://" + m[1], out, stop
		}
	}
	t.Fatalf("the command never said where it listens: %q", out.String())
	return "", nil, nil
}

func TestServesAndPrintsStats(t *testing.T) {
	url, out, stop := start(t, "-rate-429", "0.5", "-max-delay", "5ms", "-seed", "3", "-v")
	client := rpc.New(url)
	var tooMany int
	for range 20 {
		_, err := client.GetHealth(context.Background())
		var rpcErr *jsonrpc.RPCError
		switch {
		case errors.As(err, &rpcErr) && rpcErr.Code == 429:
			tooMany++
		case err != nil:
			t.Fatal(err)
		}
	}
	if tooMany == 0 || tooMany == 20 {
		t.Fatalf("%d of 20 calls answered 429 at rate 0.5", tooMany)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^getHealth +20 +(\d+) +0 +0 +(\d+) +0 `).FindStringSubmatch(out.String())
	if line == nil || line[1] != fmt.Sprint(20-tooMany) || line[2] != fmt.Sprint(tooMany) {
		t.Errorf("stats do not say 20 calls, %d forwarded and %d answered 429:\n%s", 20-tooMany, tooMany, out)
	}
	if got := strings.Count(out.String(), "fault=429"); got != tooMany {
		t.Errorf("-v logged %d 429s, want %d", got, tooMany)
	}
}

func TestStopEndsHangingCalls(t *testing.T) {
	url, out, stop := start(t, "-timeout-rate", "1", "-v")
	failed := make(chan error, 1)
	go func() {
		_, err := rpc.New(url).GetHealth(context.Background())
		failed <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "fault=timeout"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the call never reached the proxy: %s", out)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if err == nil {
			t.Error("a hanging call was answered")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a hanging call outlived the command")
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"rpcfaults"},
		{"rpcfaults", "-target", "localhost:8080"},
		{"rpcfaults", "-target", "http://localhost:8080", "-drop-send", "2"},
		{"rpcfaults", "-target", "http://localhost:8080", "-rate-429", "0.6", "-rate-503", "0.6"},
		{"rpcfaults", "-target", "http://localhost:8080", "extra"},
	} {
		if err := run(context.Background(), args, &output{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
