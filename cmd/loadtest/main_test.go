package main

import (
	"io"
	"testing"
	"time"
)

func TestParseFlagsScenarioDefaults(t *testing.T) {
	c, err := parseFlags([]string{"-scenario", "fanout"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Games != 100 || c.Think != 200*time.Millisecond || c.Moves != 20 {
		t.Errorf("fanout defaults: games %d think %s moves %d", c.Games, c.Think, c.Moves)
	}
	c, err = parseFlags([]string{"-scenario", "play", "-think", "500ms", "-url", "http://h:1/"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Think != 500*time.Millisecond || c.Duration != 60*time.Second || c.Games != 100 || c.URL != "http://h:1" {
		t.Errorf("play: think %s duration %s games %d url %s", c.Think, c.Duration, c.Games, c.URL)
	}
	c, err = parseFlags([]string{"-scenario", "reads"}, io.Discard)
	if err != nil || c.Duration != 20*time.Second || c.Concurrency != 64 || !c.Bare {
		t.Errorf("reads: %v duration %s concurrency %d bare %v", err, c.Duration, c.Concurrency, c.Bare)
	}
	for _, bad := range [][]string{{}, {"-scenario", "soak"}, {"-scenario", "play", "-rounds", "4"}, {"-scenario", "fanout", "-url", "localhost"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
