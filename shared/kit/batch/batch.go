// Package batch hands what callers add to a function off their path, in batches of whatever
// was added while the previous batch was handled.
package batch

import "sync"

// Batcher runs do on batches of the items added: one goroutine at a time, started by an item
// added when none runs, and ended when no item is left.
type Batcher[T any] struct {
	do      func([]T)
	mu      sync.Mutex
	items   []T
	running bool
	wg      sync.WaitGroup
}

// New returns a batcher handing its batches to do.
func New[T any](do func([]T)) *Batcher[T] { return &Batcher[T]{do: do} }

// Add queues item for the next batch, and starts a goroutine handling the queue's items unless
// one is at it.
func (b *Batcher[T]) Add(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(b.items, item)
	if b.running {
		return
	}
	b.running = true
	b.wg.Go(func() {
		for {
			b.mu.Lock()
			batch := b.items
			b.items = nil
			if len(batch) == 0 {
				b.running = false
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			b.do(batch)
		}
	})
}

// Wait returns once the items added before it are handled.
func (b *Batcher[T]) Wait() { b.wg.Wait() }
