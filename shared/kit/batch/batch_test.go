package batch_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/batch"
)

// Items added while a batch is handled make the next batch together; every item is handled
// once, in the order added, and Wait returns once they are.
func TestItemsAddedMeanwhileMakeOneBatch(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		batches [][]int
	)
	first, release := make(chan struct{}), make(chan struct{})
	b := batch.New(func(items []int) {
		mu.Lock()
		batches = append(batches, items)
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
	})
	b.Add(1)
	<-first
	for i := 2; i <= 5; i++ {
		b.Add(i)
	}
	close(release)
	b.Wait()
	if !slices.EqualFunc(batches, [][]int{{1}, {2, 3, 4, 5}}, slices.Equal) {
		t.Fatalf("batches %v, want [[1] [2 3 4 5]]", batches)
	}
	b.Add(6)
	b.Wait()
	if len(batches) != 3 || !slices.Equal(batches[2], []int{6}) {
		t.Fatalf("an item added after the batches ended: %v", batches)
	}
}
