package memory

import (
	"container/list"
	"sync"
)

// cache keeps the generations, live lists, merged segments and sets of sources queries used
// last, up to a memory budget.
type cache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	order  *list.List // of *entry, most recently used first
	items  map[string]*list.Element
}

// cached is what the cache holds: a *generation, a *liveList, an agent's mergedSegs or a *Set.
type cached interface{ bytes() int64 }

type entry struct {
	key   string
	val   cached
	bytes int64
}

func newCache(budget int64) *cache {
	return &cache{budget: budget, order: list.New(), items: map[string]*list.Element{}}
}

// get returns the value cached under key, nil when there is none.
func (c *cache) get(key string) cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry).val
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
			gens[i] = el.Value.(*entry).val.(*generation)
		} else {
			missing = append(missing, l)
		}
	}
	return gens, missing
}

// put adds v under key, replacing what key held, and evicts the least recently used entries
// beyond the budget. A value larger than the whole budget is served but not kept.
func (c *cache) put(key string, v cached) {
	size := v.bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.remove(el)
	}
	if size > c.budget {
		return
	}
	c.items[key] = c.order.PushFront(&entry{key: key, val: v, bytes: size})
	c.used += size
	for c.used > c.budget {
		c.remove(c.order.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	e := el.Value.(*entry)
	c.order.Remove(el)
	delete(c.items, e.key)
	c.used -= e.bytes
}
