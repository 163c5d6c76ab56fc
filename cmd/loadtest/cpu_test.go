package main

import (
	"net"
	"os"
	"testing"
	"time"
)

func TestTheServerIsFoundByItsListenerAndItsCPUIsRead(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m, err := newCPUMeter("http://"+l.Addr().String(), 0, false, "")
	if err != nil || m == nil || m.serverPID != os.Getpid() {
		t.Fatalf("meter %+v %v, want this process (%d), which listens there", m, err, os.Getpid())
	}
	// Work until the meter sees this process's CPU time grow (it counts
	// in hundredths of a second); only a meter that never does fails.
	before := m.sample()
	for spin := time.Now(); m.sample().Server <= before.Server; {
		if time.Since(spin) > time.Minute {
			t.Fatalf("a minute of work and the meter still reads %v", before.Server)
		}
	}
	if m, err := newCPUMeter("http://192.0.2.1:8080", 0, true, ""); m != nil || err != nil {
		t.Errorf("a server on another machine: %+v %v, want no meter", m, err)
	}
}

func TestCPUUsePerMoveAndGame(t *testing.T) {
	u := cpuUse(cpuSample{Server: time.Second, Postgres: 2 * time.Second}, cpuSample{Server: 3 * time.Second, Postgres: 5 * time.Second}, 500, 50)
	if u.ServerSeconds != 2 || u.PostgresSeconds != 3 || u.PerMoveMs != 10 || u.PerGameMs != 100 || u.ServerPerGameMs != 40 || u.PgPerGameMs != 60 {
		t.Errorf("cpuUse = %+v", u)
	}
}

func TestOnlyTheDatabasesBackendsAreCounted(t *testing.T) {
	m := &cpuMeter{database: "lt"}
	for title, want := range map[string]bool{
		"postgres: 15/main: wager lt 127.0.0.1(38502) idle": true,
		"postgres: 15/main: wager test_ab12 [local] SELECT": false,
		"postgres: 15/main: walwriter ":                     false,
		"postgres: wager lt 127.0.0.1(1) idle":              true, // a cluster without a name in its titles
	} {
		d := t.TempDir()
		if err := os.WriteFile(d+"/cmdline", []byte(title+"\x00\x00"), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := m.counts(d); got != want {
			t.Errorf("%q counted %v, want %v", title, got, want)
		}
	}
}
