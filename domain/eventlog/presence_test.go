package eventlog

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/db/dbtest"
)

// clock is a settable clock for the services under test.
type clock struct{ ns atomic.Int64 }

func newClock(at time.Time) *clock {
	c := &clock{}
	c.ns.Store(at.UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// only keeps the counts of the given games: the table is shared with the
// other tests of the package.
func only(counts map[string]int, games ...string) map[string]int {
	out := map[string]int{}
	for _, g := range games {
		if n, ok := counts[g]; ok {
			out[g] = n
		}
	}
	return out
}

func TestPresenceCountsOtherInstances(t *testing.T) {
	ctx := context.Background()
	c := newClock(time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC))
	p := NewPresence(dbtest.DB(t), c.now)
	g1, g2 := newGame(t), newGame(t)
	a, b, watcher := "a-"+uuid.NewString(), "b-"+uuid.NewString(), "c-"+uuid.NewString()

	publish := func(instance string, counts map[string]int) {
		t.Helper()
		if err := p.Publish(ctx, instance, counts); err != nil {
			t.Fatal(err)
		}
	}
	others := func(instance string) map[string]int {
		t.Helper()
		got, err := p.Others(ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		return only(got, g1, g2)
	}
	check := func(step, instance string, want map[string]int) {
		t.Helper()
		if got := others(instance); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Others(%s): got %v, want %v", step, instance, got, want)
		}
	}

	publish(a, map[string]int{g1: 3, g2: 1})
	publish(b, map[string]int{g1: 2})
	check("both published", a, map[string]int{g1: 2})
	check("both published", b, map[string]int{g1: 3, g2: 1})
	check("both published", watcher, map[string]int{g1: 5, g2: 1})

	// A publication replaces the instance's previous one: g2 is gone.
	c.advance(time.Second)
	publish(a, map[string]int{g1: 4})
	check("a replaced its counts", watcher, map[string]int{g1: 6})

	// An instance silent for PresenceTTL no longer counts; the one that
	// kept publishing does.
	c.advance(PresenceTTL)
	publish(b, map[string]int{g1: 2})
	check("a silent for exactly the TTL", watcher, map[string]int{g1: 2})
	check("a silent for exactly the TTL", b, map[string]int{})

	// Once a speaks again it counts again.
	publish(a, map[string]int{g1: 1})
	check("a back", watcher, map[string]int{g1: 3})

	// Publishing nothing removes every count of the instance.
	publish(a, map[string]int{})
	check("a publishes no games", watcher, map[string]int{g1: 2})
}

func TestPresenceForgetsSilentInstances(t *testing.T) {
	ctx := context.Background()
	c := newClock(time.Date(2031, 4, 1, 12, 0, 0, 0, time.UTC))
	p := NewPresence(dbtest.DB(t), c.now)
	g := newGame(t)
	dead, alive := "dead-"+uuid.NewString(), "alive-"+uuid.NewString()

	if err := p.Publish(ctx, dead, map[string]int{g: 7, uuid.NewString(): 9}); err != nil {
		t.Fatalf("publish with a game that does not exist: %v", err)
	}
	rows := func(instance string) int {
		t.Helper()
		var n int
		if err := dbtest.DB(t).QueryRowContext(ctx, "SELECT count(*) FROM instance_presence WHERE instance_id = ?", instance).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := rows(dead); got != 1 {
		t.Errorf("rows of the instance: got %d, want 1", got)
	}

	// A minute later the instance that stopped publishing is forgotten by
	// the next publication of any instance.
	c.advance(time.Minute + time.Second)
	if err := p.Publish(ctx, alive, map[string]int{g: 1}); err != nil {
		t.Fatal(err)
	}
	if got := rows(dead); got != 0 {
		t.Errorf("rows of an instance silent for over a minute: got %d, want 0", got)
	}
	got, err := p.Others(ctx, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	if got := only(got, g); !reflect.DeepEqual(got, map[string]int{g: 1}) {
		t.Errorf("Others: got %v, want %v", got, map[string]int{g: 1})
	}

	// An instance that was itself silent for over a minute (paused, not
	// dead) publishes its counts again.
	c.advance(2 * time.Minute)
	if err := p.Publish(ctx, alive, map[string]int{g: 4}); err != nil {
		t.Fatalf("publish after a long pause: %v", err)
	}
	got, err = p.Others(ctx, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	if got := only(got, g); !reflect.DeepEqual(got, map[string]int{g: 4}) {
		t.Errorf("Others after the pause: got %v, want %v", got, map[string]int{g: 4})
	}
}
