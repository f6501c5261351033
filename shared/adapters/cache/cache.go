// Package cache keeps what the hot path reads on every request and changes seldom (API keys,
// projects, agents, a project's deal stages) in process: bounded, each entry kept at most a TTL, and dropped on every
// instance when it changes, by notices over NATS (Notices). While NATS is down the TTL bounds how
// long a change may go unseen; when NATS comes back every cache is emptied, since notices may have
// been missed meanwhile.
package cache

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache is a bounded map of values read from the store. A nil Cache caches nothing. An entry
// past its TTL is not served; it stays until it is read or evicted (no goroutine sweeps).
type Cache[K comparable, V any] struct {
	lru *lru.Cache[K, entry[V]]
	ttl time.Duration
	// mu orders keeping a value read against dropping: a value read before a drop is not kept
	// after it (epoch counts the drops).
	mu    sync.Mutex
	epoch uint64
}

// entry is a cached value and when it stops being served.
type entry[V any] struct {
	v     V
	until time.Time
}

// New returns a cache of at most size entries, each kept at most ttl; nil (no caching) when size
// is 0.
func New[K comparable, V any](size int, ttl time.Duration) *Cache[K, V] {
	if size <= 0 {
		return nil
	}
	l, err := lru.New[K, entry[V]](size)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &Cache[K, V]{lru: l, ttl: ttl}
}

// Load returns the value of k, read by load when it is not cached. Errors are not cached, nor is
// a value whose read overlapped a drop: it may predate the change the drop was for.
func (c *Cache[K, V]) Load(ctx context.Context, k K, load func(context.Context) (V, error)) (V, error) {
	if c == nil {
		return load(ctx)
	}
	if e, ok := c.lru.Get(k); ok && time.Now().Before(e.until) {
		return e.v, nil
	}
	return c.Refresh(ctx, k, load)
}

// Refresh reads the value of k with load, cached or not, and keeps it unless the read overlapped
// a drop.
func (c *Cache[K, V]) Refresh(ctx context.Context, k K, load func(context.Context) (V, error)) (V, error) {
	if c == nil {
		return load(ctx)
	}
	c.mu.Lock()
	epoch := c.epoch
	c.mu.Unlock()
	v, err := load(ctx)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.epoch == epoch {
		c.lru.Add(k, entry[V]{v: v, until: time.Now().Add(c.ttl)})
	}
	c.mu.Unlock()
	return v, nil
}

// Drop removes every value that stale reports, and keeps no value being read meanwhile.
func (c *Cache[K, V]) Drop(stale func(V) bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for _, k := range c.lru.Keys() {
		if e, ok := c.lru.Peek(k); ok && stale(e.v) {
			c.lru.Remove(k)
		}
	}
}

// Purge removes every value.
func (c *Cache[K, V]) Purge() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.lru.Purge()
}
