package app

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// hostLoad tells whether the machine's cores are saturated, from the
// kernel's CPU time counters (/proc/stat, read every second): saturated
// when, in each of the last saturatedFor seconds, the cores were busy at
// least saturatedShare of the time. Background work that can wait (the
// public log's sequencer) waits then, leaving the cores to the players.
// Where /proc/stat cannot be read (not Linux), the machine never counts
// as saturated.
type hostLoad struct {
	saturated atomic.Bool
	streak    int // seconds in a row the cores were saturatedShare busy; Run's only
}

const (
	saturatedShare = 0.9
	saturatedFor   = 3
)

// Busy reports whether the machine's cores are saturated.
func (h *hostLoad) Busy() bool { return h.saturated.Load() }

// Run samples /proc/stat every second until ctx ends.
func (h *hostLoad) Run(ctx context.Context) {
	prev, err := readCPUTimes("/proc/stat")
	if err != nil {
		return // not Linux: never saturated
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, err := readCPUTimes("/proc/stat")
		if err != nil { // out of file descriptors, say: not known to be saturated
			h.observe(0)
			continue
		}
		h.observe(cur.busyShareSince(prev))
		prev = cur
	}
}

// observe takes the share of a second the cores were busy.
func (h *hostLoad) observe(share float64) {
	if share >= saturatedShare {
		h.streak++
	} else {
		h.streak = 0
	}
	h.saturated.Store(h.streak >= saturatedFor)
}

// cpuTimes are the machine's CPU time counters, in clock ticks.
type cpuTimes struct{ idle, total uint64 }

// busyShareSince is the share of the time since prev the cores were busy.
func (c cpuTimes) busyShareSince(prev cpuTimes) float64 {
	total := c.total - prev.total
	if total == 0 || c.total < prev.total || c.idle < prev.idle {
		return 0
	}
	return 1 - float64(c.idle-prev.idle)/float64(total)
}

// readCPUTimes reads the all-cores line of /proc/stat: user, nice,
// system, idle, iowait, irq, softirq, steal (guest time is counted in
// user already). Idle is idle plus iowait.
func readCPUTimes(path string) (cpuTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read %s: %w", path, err)
	}
	return parseCPUTimes(line)
}

func parseCPUTimes(line string) (cpuTimes, error) {
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("not the all-cores line of /proc/stat: %q", line)
	}
	var c cpuTimes
	for i, f := range fields[1:9] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat field %d: %w", i+1, err)
		}
		c.total += n
		if i == 3 || i == 4 { // idle, iowait
			c.idle += n
		}
	}
	return c, nil
}
