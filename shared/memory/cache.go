package memory

import (
	"container/list"
	"sync"
)

// cache keeps the generations queries used last, up to a memory budget.
type cache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	order  *list.List // of *entry, most recently used first
	items  map[string]*list.Element
}

type entry struct {
	key   string
	gen   *generation
	bytes int64
}

func newCache(budget int64) *cache {
	return &cache{budget: budget, order: list.New(), items: map[string]*list.Element{}}
}

// lookup returns the cached generation of each of live (nil where missing) and the ones
// missing.
func (c *cache) lookup(live []Live) ([]*generation, []Live) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gens := make([]*generation, len(live))
	var missing []Live
	for i, l := range live {
		if el, ok := c.items[l.key()]; ok {
			c.order.MoveToFront(el)
			gens[i] = el.Value.(*entry).gen
		} else {
			missing = append(missing, l)
		}
	}
	return gens, missing
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
