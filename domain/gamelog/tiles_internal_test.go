package gamelog

import (
	"testing"

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
