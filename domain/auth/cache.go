package auth

import (
	"context"
	"sync"
	"time"
)

// cacheTTL is how long an instance trusts what it read of a user or a
// session: a username changed on another instance shows within it, and
// an ended session is refused at once on the instance that ended it (and
// everywhere once revocations are shared).
const cacheTTL = 30 * time.Second

// cacheSize bounds a cache; past it, the cache starts over.
const cacheSize = 100_000

// card is what a principal needs of a user.
type card struct {
	Username string `bun:"username"`
	Wallet   string `bun:"wallet_address"`
}

// cache remembers rows by key for cacheTTL, so that an authenticated
// request does not read the database.
type cache[T any] struct {
	mu sync.Mutex
	m  map[string]cached[T]
}

type cached[T any] struct {
	v  T
	at time.Time
}

// get returns the row of key, read by load when it is not remembered or
// too old (load's sql.ErrNoRows is returned as is, and not remembered).
func (c *cache[T]) get(ctx context.Context, now time.Time, key string, load func(context.Context) (T, error)) (T, error) {
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < cacheTTL {
		return e.v, nil
	}
	v, err := load(ctx)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = map[string]cached[T]{}
	}
	c.m[key] = cached[T]{v: v, at: now}
	c.mu.Unlock()
	return v, nil
}

func (c *cache[T]) forget(key string) {
	c.mu.Lock()
	delete(c.m, key)
	c.mu.Unlock()
}

func (c *cache[T]) clear() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
