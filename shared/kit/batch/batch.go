// Package batch does work handed over one item at a time in batches, off the callers' path:
// the items added while a batch is being done make the next batch, so the more items come at
// once, the fewer batches (store commands, say) they cost.
package batch

import "sync"

// Queue gathers items and does them in batches, one batch at a time, in a goroutine that runs
// while there are items.
type Queue[T any] struct {
	do func(items []T)

	mu      sync.Mutex
	items   []T
	running bool
	workers sync.WaitGroup
}

// New returns a queue doing its batches with do.
func New[T any](do func(items []T)) *Queue[T] { return &Queue[T]{do: do} }

// Add queues item, and starts doing the queue's items unless that is under way.
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append(q.items, item)
	if q.running {
		return
	}
	q.running = true
	q.workers.Go(func() {
		for {
			q.mu.Lock()
			items := q.items
			q.items = nil
			if len(items) == 0 {
				q.running = false
				q.mu.Unlock()
				return
			}
			q.mu.Unlock()
			q.do(items)
		}
	})
}

// Wait returns once every item added before it is done.
func (q *Queue[T]) Wait() { q.workers.Wait() }
