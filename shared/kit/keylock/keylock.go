// Package keylock bounds work by key within one process: concurrent changes of one document take
// turns instead of crossing and re-applying, and one account's requests share a budget of
// concurrent ones. Waiters are served in the order they came, waiting ends with the caller's
// context, and a key no one holds or waits for takes no memory. (golang.org/x/sync has no keyed
// lock or semaphore; moby/locker's cannot stop waiting when a context ends.)
package keylock

import (
	"context"
	"sync"
)

// Locks is a set of locks by key. Its zero value is ready to use and lets one holder at a time
// hold a key; with Holders above one, that many hold a key at once (a semaphore per key).
type Locks struct {
	Holders int

	mu   sync.Mutex
	keys map[string]*lock
}

type lock struct {
	turn  chan struct{} // holds a token per holder of the key
	users int           // holders and waiters
}

// Lock waits for key's turn and returns the function that ends it, or ctx's error when ctx ends
// first.
func (l *Locks) Lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]*lock{}
	}
	k := l.keys[key]
	if k == nil {
		k = &lock{turn: make(chan struct{}, max(l.Holders, 1))}
		l.keys[key] = k
	}
	k.users++
	l.mu.Unlock()
	select {
	case k.turn <- struct{}{}:
		return sync.OnceFunc(func() {
			<-k.turn
			l.leave(key, k)
		}), nil
	case <-ctx.Done():
		l.leave(key, k)
		return nil, ctx.Err()
	}
}

// Held is how many keys are held or waited for.
func (l *Locks) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

func (l *Locks) leave(key string, k *lock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.users--; k.users == 0 {
		delete(l.keys, key)
	}
}
