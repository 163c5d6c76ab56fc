package main

import (
	"net"
	"strings"
	"testing"
)

func TestParseMetricsPicksUnlabelledSeries(t *testing.T) {
	text := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 452
go_memstats_heap_inuse_bytes 2.4510464e+07
http_requests_total{method="GET",route="/health",status="200"} 3
process_resident_memory_bytes 5.6721408e+07
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m != (ServerMetrics{ResidentBytes: 56721408, HeapInuseBytes: 24510464, Goroutines: 452}) {
		t.Errorf("got %+v", m)
	}
	if _, err := parseMetrics(strings.NewReader("go_goroutines 1\n")); err == nil ||
		!strings.Contains(err.Error(), "process_resident_memory_bytes") {
		t.Errorf("missing series: got %v", err)
	}
	p := perSocket(ServerMetrics{ResidentBytes: 1000, Goroutines: 10}, ServerMetrics{ResidentBytes: 3000, Goroutines: 30}, 10)
	if p.ResidentBytesPerSocket != 200 || p.GoroutinesPerSocket != 2 {
		t.Errorf("per socket: got %+v", p)
	}
}

func TestParseLocalIPs(t *testing.T) {
	ips, err := parseLocalIPs("127.0.0.1-127.0.0.3, 10.0.0.7")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "10.0.0.7"}
	if len(ips) != len(want) {
		t.Fatalf("got %v", ips)
	}
	for i, ip := range ips {
		if !ip.Equal(net.ParseIP(want[i])) {
			t.Errorf("%d: got %v, want %s", i, ip, want[i])
		}
	}
	for _, bad := range []string{"127.0.0.3-127.0.0.1", "127.0.0.1-127.0.1.2", "nope"} {
		if _, err := parseLocalIPs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if ips, err := parseLocalIPs(""); err != nil || len(ips) != 0 {
		t.Errorf("empty: %v %v", ips, err)
	}
}

func TestWSURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:8080": "ws://localhost:8080/ws",
		"https://example.com":   "wss://example.com/ws",
	} {
		if got := wsURL(in); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}
