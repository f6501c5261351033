package memory

import (
	"container/list"
	"context"
	"sync"

	"golang.org/x/sync/singleflight"
)

// cache keeps the generations queries used last, up to a memory budget. Concurrent misses of
// one generation load it once.
type cache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	order  *list.List // of *entry, most recently used first
	items  map[string]*list.Element
	loads  singleflight.Group
}

type entry struct {
	key   string
	gen   *generation
	bytes int64
}

func newCache(budget int64) *cache {
	return &cache{budget: budget, order: list.New(), items: map[string]*list.Element{}}
}

// get returns the generation of key, loading it with load when it is not cached.
func (c *cache) get(ctx context.Context, key string, load func(context.Context) (*generation, error)) (*generation, error) {
	c.mu.Lock()
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*entry).gen, nil
	}
	c.mu.Unlock()
	v, err, _ := c.loads.Do(key, func() (any, error) {
		g, err := load(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		c.put(key, g)
		return g, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*generation), nil
}

// put adds a generation and evicts the least recently used ones beyond the budget. A
// generation larger than the whole budget is served but not kept.
func (c *cache) put(key string, g *generation) {
	size := g.bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok || size > c.budget {
		return
	}
	c.items[key] = c.order.PushFront(&entry{key: key, gen: g, bytes: size})
	c.used += size
	for c.used > c.budget {
		last := c.order.Back()
		e := last.Value.(*entry)
		c.order.Remove(last)
		delete(c.items, e.key)
		c.used -= e.bytes
	}
}
