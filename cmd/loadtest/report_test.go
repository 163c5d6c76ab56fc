package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTableWriteAlignsColumns(t *testing.T) {
	tab := Table{
		Header: []string{"endpoint", "req/s", "p99"},
		Rows: [][]string{
			{"GET /games/live", "733", "200 ms"},
			{"section"},
			{"GET /x", "27036", "1.60 ms"},
		},
	}
	var b bytes.Buffer
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"endpoint         req/s      p99",
		"-------------------------------",
		"GET /games/live    733   200 ms",
		"section",
		"GET /x           27036  1.60 ms",
		"",
	}, "\n")
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTableWriteLeftAligned(t *testing.T) {
	tab := Table{Header: []string{"metric", "value"}, LeftAll: true,
		Rows: [][]string{{"  moves", "12"}, {"  delivered", "100.00 % (5 of 5)"}}}
	var b bytes.Buffer
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "metric       value\n" +
		"------------------------------\n" +
		"  moves      12\n" +
		"  delivered  100.00 % (5 of 5)\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtMs(0.5), "0.50 ms"},
		{fmtMs(12.34), "12.3 ms"},
		{fmtMs(250), "250 ms"},
		{fmtMs(2000), "2.00 s"},
		{fmtMs(12500), "12.5 s"},
		{fmtLatency(Latency{}), "no samples"},
		{fmtLatency(Latency{Count: 3, P50Ms: 1, P90Ms: 2, P99Ms: 3, MaxMs: 40}), "1.00 ms / 2.00 ms / 3.00 ms / 40.0 ms  (n=3)"},
		{fmtBytes(-10117), "-9.9 KiB"},
		{fmtBytes(3 << 20), "3.00 MiB"},
		{fmtRatio(nil), "-"},
		{fmtErrors(nil), "0"},
		{fmtErrors([]ErrorCount{{"timeout", 3}, {"HTTP 500 INTERNAL", 1}}), "4 (timeout: 3, HTTP 500 INTERNAL: 1)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestReadsTableComparesWithBare(t *testing.T) {
	rows := []EndpointResult{
		{Endpoint: "GET /games/live", Server: "project", PerSecond: 500, Latency: Latency{Count: 1, P50Ms: 10, P99Ms: 40},
			CPUPerRequestUs: 150},
		{Endpoint: "GET /games/live", Server: "bare", PerSecond: 2000, Latency: Latency{Count: 1, P50Ms: 2, P99Ms: 10},
			CPUPerRequestUs: 60},
		{Endpoint: "GET /games/:id/state", Server: "project", PerSecond: 800, Latency: Latency{Count: 1, P50Ms: 5, P99Ms: 20},
			Errors: []ErrorCount{{"timeout", 2}}, ErrorsTotal: 2},
	}
	compareWithBare(rows)
	rep := &Report{Reads: &ReadsResult{LiveGames: 100, Concurrency: 64, DurationSeconds: 10, Endpoints: rows},
		SignIn: SignInResult{Wallets: 201, WalletsPerSec: 800}, Errors: []ErrorCount{{"GET /games/:id/state (project): timeout", 2}}}
	var b bytes.Buffer
	if err := readsTable(rep).Write(&b); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"endpoint               server  req/s      p50      p99  errors   CPU/req  req/s vs bare  p99 vs bare  CPU vs bare",
		"-----------------------------------------------------------------------------------------------------------------",
		"GET /games/live       project    500  10.0 ms  40.0 ms       0  150.0 µs          0.25x        4.00x        2.50x",
		"GET /games/live          bare   2000  2.00 ms  10.0 ms       0   60.0 µs              -            -            -",
		"GET /games/:id/state  project    800  5.00 ms  20.0 ms       2         -              -            -            -",
		"100 live games, 64 connections, 10 s per endpoint; sign-in 201 wallets at 800.0/s",
		"error GET /games/:id/state (project): timeout: 2",
		"",
	}, "\n")
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
