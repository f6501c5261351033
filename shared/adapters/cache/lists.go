package cache

import (
	"context"
	"slices"
	"time"
)

// keyed is a list as cached, with the key it was read for, so that a drop can tell whose it is.
type keyed[K comparable, T any] struct {
	key  K
	list []T
}

// lists caches lists by key, an empty one included, each dropped everywhere by the notices of
// kind whose id is idOf of its key; callers get copies (they change what they are given).
type lists[K comparable, T any] struct {
	cache *Cache[K, keyed[K, T]]
}

// newLists returns a cache of size lists, each kept at most ttl.
func newLists[K comparable, T any](notices *Notices, kind string, idOf func(K) string, size int, ttl time.Duration) lists[K, T] {
	c := New[K, keyed[K, T]](size, ttl)
	notices.onChange(kind, func(id string) { c.Drop(func(e keyed[K, T]) bool { return idOf(e.key) == id }) })
	notices.onReconnect(c.Purge)
	return lists[K, T]{cache: c}
}

// load returns a copy of k's list, read by read when it is not cached.
func (l lists[K, T]) load(ctx context.Context, k K, read func(context.Context) ([]T, error)) ([]T, error) {
	got, err := l.cache.Load(ctx, k, func(ctx context.Context) (keyed[K, T], error) {
		list, err := read(ctx)
		return keyed[K, T]{key: k, list: list}, err
	})
	return slices.Clone(got.list), err
}
