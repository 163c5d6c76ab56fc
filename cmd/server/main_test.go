package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"wager/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestRunServesAndStopsCleanly(t *testing.T) {
	env := map[string]string{"ADDR": "127.0.0.1:0", "METRICS_ADDR": "127.0.0.1:0", "DATABASE_URL": dbtest.URL(t),
		"DATA_DIR": t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	out, logw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"server"}, func(k string) string { return env[k] }, logw) }()

	addr, ops := "", ""
	lines := bufio.NewScanner(out)
	listening := regexp.MustCompile(`msg=listening addr=(\S+)`)
	opsListening := regexp.MustCompile(`msg="operations listening \(metrics, profiler\)" addr=(\S+)`)
	for addr == "" && lines.Scan() {
		if m := opsListening.FindStringSubmatch(lines.Text()); m != nil {
			ops = m[1]
		}
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	go io.Copy(io.Discard, out)
	if addr == "" {
		t.Fatalf("server never logged its address: %v", <-done)
	}
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

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop within 10 seconds")
	}
}

func TestRunRefusesInvalidConfigurationNamingTheVariable(t *testing.T) {
	env := map[string]string{"ABUSE_WINDOW": "soon", "MIN_SDK_VERSION": "one"}
	err := run(context.Background(), []string{"server"}, func(k string) string { return env[k] }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ABUSE_WINDOW") || !strings.Contains(err.Error(), "MIN_SDK_VERSION") {
		t.Fatalf("got %v, want an error naming ABUSE_WINDOW and MIN_SDK_VERSION", err)
	}
}
