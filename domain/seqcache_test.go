package domain

import (
	"testing"
	"time"
)

type cachedRow struct {
	Seq     int
	Players []string
}

func TestSeqCacheServesAValueWhileItIsCurrent(t *testing.T) {
	latest := map[string]int{}
	c := SeqCache[cachedRow]{MaxAge: 5 * time.Second, Size: 2, Latest: func(id string) (int, bool) {
		s, ok := latest[id]
		return s, ok
	}}
	t0 := time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Put("g1", 3, cachedRow{Seq: 3, Players: []string{"a", "b"}}, t0)

	if _, ok := c.Get("g2", t0); ok {
		t.Fatal("a game never put was served")
	}
	if v, ok := c.Get("g1", t0.Add(time.Second)); !ok || v.Seq != 3 {
		t.Fatalf("nothing heard of the game: got %+v, %v; want the value", v, ok)
	}
	latest["g1"] = 3
	if _, ok := c.Get("g1", t0.Add(time.Second)); !ok {
		t.Fatal("the value read at the newest seq heard of was not served")
	}
	if _, ok := c.Get("g1", t0.Add(5*time.Second)); ok {
		t.Fatal("a value MaxAge old was served")
	}
	latest["g1"] = 4
	if _, ok := c.Get("g1", t0.Add(time.Second)); ok {
		t.Fatal("a value older than an event heard of was served")
	}
	delete(latest, "g1")

	// A caller changes its own copy of the struct, not the value kept.
	v, _ := c.Get("g1", t0)
	v.Seq, v.Players = 9, nil
	if kept, _ := c.Get("g1", t0); kept.Seq != 3 || len(kept.Players) != 2 {
		t.Fatalf("a caller's change to its copy reached the cache: %+v", kept)
	}

	// Past Size, the cache starts over.
	c.Put("g2", 1, cachedRow{Seq: 1}, t0)
	c.Put("g3", 1, cachedRow{Seq: 1}, t0)
	if _, ok := c.Get("g1", t0); ok {
		t.Fatal("the cache kept more than Size games")
	}
	if _, ok := c.Get("g3", t0); !ok {
		t.Fatal("the game put last was not kept")
	}
}
