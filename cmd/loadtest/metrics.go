package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ServerMetrics are the server process's figures read from its
// Prometheus endpoint.
type ServerMetrics struct {
	ResidentBytes  float64 `json:"residentBytes" doc:"process_resident_memory_bytes"`
	HeapInuseBytes float64 `json:"heapInuseBytes" doc:"go_memstats_heap_inuse_bytes"`
	Goroutines     float64 `json:"goroutines" doc:"go_goroutines"`
}

// PerSocket is the server's cost of the sockets opened between two reads
// of its metrics, divided by their number.
type PerSocket struct {
	Before                 ServerMetrics `json:"before"`
	After                  ServerMetrics `json:"after"`
	ResidentBytesPerSocket float64       `json:"residentBytesPerSocket"`
	HeapInuseBytesPerSock  float64       `json:"heapInuseBytesPerSocket"`
	GoroutinesPerSocket    float64       `json:"goroutinesPerSocket"`
}

func perSocket(before, after ServerMetrics, sockets int) *PerSocket {
	n := float64(max(sockets, 1))
	return &PerSocket{Before: before, After: after,
		ResidentBytesPerSocket: (after.ResidentBytes - before.ResidentBytes) / n,
		HeapInuseBytesPerSock:  (after.HeapInuseBytes - before.HeapInuseBytes) / n,
		GoroutinesPerSocket:    (after.Goroutines - before.Goroutines) / n}
}

// scrapeMetrics reads the three unlabelled series loadtest needs from a
// Prometheus text endpoint.
func scrapeMetrics(ctx context.Context, c *http.Client, url string) (ServerMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ServerMetrics{}, fmt.Errorf("reading metrics at %s: %w", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return ServerMetrics{}, fmt.Errorf("reading metrics at %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ServerMetrics{}, fmt.Errorf("reading metrics at %s: HTTP %d", url, resp.StatusCode)
	}
	m, err := parseMetrics(resp.Body)
	if err != nil {
		return ServerMetrics{}, fmt.Errorf("reading metrics at %s: %w", url, err)
	}
	return m, nil
}

// parseMetrics picks process_resident_memory_bytes,
// go_memstats_heap_inuse_bytes and go_goroutines out of the Prometheus
// text format; it fails when one is missing.
func parseMetrics(r io.Reader) (ServerMetrics, error) {
	var m ServerMetrics
	want := map[string]*float64{
		"process_resident_memory_bytes": &m.ResidentBytes,
		"go_memstats_heap_inuse_bytes":  &m.HeapInuseBytes,
		"go_goroutines":                 &m.Goroutines,
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		dst, ok := want[f[0]]
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return m, fmt.Errorf("series %s: value %q: %w", f[0], f[1], err)
		}
		*dst = v
		delete(want, f[0])
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if len(want) > 0 {
		var missing []string
		for k := range want {
			missing = append(missing, k)
		}
		return m, fmt.Errorf("missing series %s", strings.Join(missing, ", "))
	}
	return m, nil
}
