package gamelog

import (
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// The tiles served are exactly those of the tree: the ones tlog asks for
// a tree of its size, and none a request could make up (another height,
// a level or index past the tree, a width that overflows).
func TestATreeHasTheTilesTlogAsksForAndNoOther(t *testing.T) {
	for _, size := range []int64{1, 255, 256, 257, 65_536, 70_000} {
		for _, tile := range tlog.NewTiles(TileHeight, 0, size) {
			if !hasTile(tile, size) {
				t.Errorf("size %d: tile %s refused", size, tile.Path())
			}
		}
	}
	for _, c := range []struct {
		tile tlog.Tile
		size int64
	}{
		{tlog.Tile{H: 8, L: 0, N: 0, W: 6}, 5},
		{tlog.Tile{H: 8, L: 0, N: 1, W: 1}, 256},
		{tlog.Tile{H: 8, L: 1, N: 0, W: 1}, 255},
		{tlog.Tile{H: 4, L: 0, N: 0, W: 1}, 100},
		{tlog.Tile{H: 8, L: -1, N: 0, W: 1}, 100},
		{tlog.Tile{H: 8, L: 6, N: 1 << 40, W: 256}, 70_000},
		{tlog.Tile{H: 8, L: 0, N: 1<<62 - 1, W: 256}, 70_000},
		{tlog.Tile{H: 8, L: 0, N: -1, W: 1}, 70_000},
	} {
		if hasTile(c.tile, c.size) {
			t.Errorf("size %d: tile %+v served", c.size, c.tile)
		}
	}
}

// While the machine is saturated and games end at a rate where logging
// them competes with the players, the sequencer leaves the queue for
// later, never longer than maxLag since it last emptied it; a few games
// ending on a busy machine (a test run) are logged at once.
func TestTheSequencerYieldsToASaturatedMachineForAtMostMaxLag(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	busy := true
	l := &Log{busy: func() bool { return busy }, now: func() time.Time { return now }}
	emptied := now
	now = now.Add(maxLag - time.Second)
	if !l.yields(emptied, competingRate) {
		t.Error("saturated, within maxLag: the sequencer does not yield")
	}
	if l.yields(emptied, competingRate-1) {
		t.Error("saturated, but few games ending: the sequencer yields")
	}
	now = now.Add(time.Second)
	if l.yields(emptied, competingRate) {
		t.Errorf("saturated for %s since the queue was emptied: the sequencer still yields", maxLag)
	}
	now, busy = emptied.Add(time.Second), false
	if l.yields(emptied, competingRate) {
		t.Error("an idle machine: the sequencer yields")
	}
	if (&Log{now: l.now}).yields(emptied, competingRate) {
		t.Error("no load reading: the sequencer yields")
	}
}
