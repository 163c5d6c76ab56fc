package domain

import (
	"sync"
	"time"
)

// SeqCache keeps values read of games (a row, a page's view model) for as
// long as they are current: a value read at a game's seq s serves until
// an event after s is heard of (the instance hears of every committed
// event, its own at commit and other instances' by announcement), and at
// most MaxAge in any case, in case an announcement was lost.
//
// Every Get of a game hands out the value Put kept, not a deep copy: what
// a T's pointers, slices and maps reach (all of it, for a pointer T) is
// shared by every caller, and nobody changes it, the one who put it
// included. A caller may change the fields of its own copy of a struct T,
// and copies a shared part before changing it (appending to a shared
// slice included). That keeps the reads behind every move and game page
// free of copies; the values kept (game.Game, the game detail of GET
// /games/:id) are tested to hold to it.
type SeqCache[T any] struct {
	// Latest returns the newest seq heard of for a game, false when
	// nothing was heard of it lately.
	Latest func(gameID string) (int, bool)
	MaxAge time.Duration
	Size   int // past it the cache starts over

	mu sync.Mutex
	m  map[string]seqEntry[T]
}

type seqEntry[T any] struct {
	v   T
	seq int
	at  time.Time
}

// Get returns the value of gameID if it is current at now (see SeqCache
// for what the caller may change of it), or false.
func (c *SeqCache[T]) Get(gameID string, now time.Time) (T, bool) {
	c.mu.Lock()
	e, ok := c.m[gameID]
	c.mu.Unlock()
	if !ok || now.Sub(e.at) >= c.MaxAge {
		var zero T
		return zero, false
	}
	if latest, known := c.Latest(gameID); known && latest > e.seq {
		var zero T
		return zero, false
	}
	return e.v, true
}

// Put keeps v, read at the game's seq, from now. v is shared from then
// on: nothing it reaches may change.
func (c *SeqCache[T]) Put(gameID string, seq int, v T, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.Size {
		c.m = map[string]seqEntry[T]{}
	}
	c.m[gameID] = seqEntry[T]{v: v, seq: seq, at: now}
}
