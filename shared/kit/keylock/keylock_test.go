package keylock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kit/keylock"
)

// Holders of one key take turns: each appends its own number twice with a yield in between, and
// no two holders' pairs interleave; every holder got its turn.
func TestOneKeyTakesTurns(t *testing.T) {
	var locks keylock.Locks
	var mu sync.Mutex
	var log []int
	var wg sync.WaitGroup
	const n = 32
	for i := range n {
		wg.Go(func() {
			unlock, err := locks.Lock(context.Background(), "deal-1")
			if err != nil {
				t.Error(err)
				return
			}
			defer unlock()
			for range 2 {
				mu.Lock()
				log = append(log, i)
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if len(log) != 2*n {
		t.Fatalf("%d entries, want %d", len(log), 2*n)
	}
	seen := map[int]bool{}
	for j := 0; j < len(log); j += 2 {
		if log[j] != log[j+1] || seen[log[j]] {
			t.Fatalf("holders crossed: %v", log)
		}
		seen[log[j]] = true
	}
	if locks.Held() != 0 {
		t.Fatalf("%d keys still held after every holder left", locks.Held())
	}
}

// Different keys do not wait for each other: a second key is held while the first is.
func TestKeysAreIndependent(t *testing.T) {
	var locks keylock.Locks
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := locks.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer first()
	second, err := locks.Lock(ctx, "b")
	if err != nil {
		t.Fatalf("key b waited for key a: %v", err)
	}
	second()
}

// A waiter stops waiting when its context ends, holds nothing, and the key's next holder gets it
// when the current one leaves; unlocking twice releases once.
func TestWaitEndsWithTheContext(t *testing.T) {
	var locks keylock.Locks
	unlock, err := locks.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := locks.Lock(ctx, "a")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting ended with %v, want context.Canceled", err)
	}
	next := make(chan func())
	go func() {
		u, err := locks.Lock(context.Background(), "a")
		if err != nil {
			t.Error(err)
		}
		next <- u
	}()
	unlock()
	unlock()
	u := <-next
	if third, err := tryLock(&locks, "a"); err == nil {
		third()
		t.Fatal("a second unlock released the next holder's turn")
	}
	u()
	if locks.Held() != 0 {
		t.Fatalf("%d keys held after every holder left", locks.Held())
	}
}

// tryLock takes key only if it is free now.
func tryLock(l *keylock.Locks, key string) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return l.Lock(ctx, key)
}

// With Holders, that many hold one key at once and no more: the next waits until one leaves.
func TestHolders(t *testing.T) {
	locks := keylock.Locks{Holders: 3}
	var unlocks []func()
	for i := range 3 {
		u, err := tryLock(&locks, "account")
		if err != nil {
			t.Fatalf("holder %d of 3 waited: %v", i+1, err)
		}
		unlocks = append(unlocks, u)
	}
	if u, err := tryLock(&locks, "account"); err == nil {
		u()
		t.Fatal("a fourth holder got the key")
	}
	unlocks[0]()
	u, err := tryLock(&locks, "account")
	if err != nil {
		t.Fatalf("a holder left and the next still waited: %v", err)
	}
	u()
	for _, u := range unlocks[1:] {
		u()
	}
	if locks.Held() != 0 {
		t.Fatalf("%d keys held after every holder left", locks.Held())
	}
}
