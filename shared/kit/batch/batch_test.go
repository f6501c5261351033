package batch_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/batch"
)

// Items added while a batch is being done are done together in the next one, each once, in the
// order they were added; Wait returns once all are done.
func TestItemsAddedMeanwhileMakeTheNextBatch(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var batches [][]int
	first, release := make(chan struct{}), make(chan struct{})
	q := batch.New(func(items []int) {
		mu.Lock()
		batches = append(batches, items)
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
	})
	q.Add(0)
	<-first // the first batch is being done: what comes now waits for it
	for i := 1; i <= 5; i++ {
		q.Add(i)
	}
	close(release)
	q.Wait()
	if want := [][]int{{0}, {1, 2, 3, 4, 5}}; !slices.EqualFunc(batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	q.Add(6)
	q.Wait()
	if last := batches[len(batches)-1]; !slices.Equal(last, []int{6}) {
		t.Fatalf("an item added after the queue ran dry: batch %v", last)
	}
}
