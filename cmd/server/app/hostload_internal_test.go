package app

import "testing"

// The share of busy time between two readings of /proc/stat: idle and
// iowait are idle, everything else busy.
func TestBusyShareFromProcStat(t *testing.T) {
	before, err := parseCPUTimes("cpu  100 0 100 700 100 0 0 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseCPUTimes("cpu  200 0 180 710 100 10 0 0 0 0")
	if err != nil {
		t.Fatal(err)
	}
	if got := after.busyShareSince(before); got < 0.949 || got > 0.951 {
		t.Errorf("busy share %.3f, want 0.95 (190 of 200 ticks busy)", got)
	}
	if got := before.busyShareSince(before); got != 0 {
		t.Errorf("no time passed: busy share %v, want 0", got)
	}
	for _, bad := range []string{"intr 1 2 3", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 x 4 5 6 7 8"} {
		if _, err := parseCPUTimes(bad); err == nil {
			t.Errorf("%q read as the all-cores line", bad)
		}
	}
}

// Saturated after three seconds in a row at 90 % busy or more, and no
// longer from the first second below it (or a reading that failed).
func TestTheMachineIsSaturatedAfterThreeBusySeconds(t *testing.T) {
	var h hostLoad
	for i, c := range []struct {
		share float64
		want  bool
	}{{0.95, false}, {0.99, false}, {0.9, true}, {1, true}, {0.5, false}, {0.95, false}, {0.95, false}, {0.95, true}, {0, false}} {
		h.observe(c.share)
		if h.Busy() != c.want {
			t.Errorf("second %d at %.0f %% busy: saturated %v, want %v", i+1, c.share*100, h.Busy(), c.want)
		}
	}
}
