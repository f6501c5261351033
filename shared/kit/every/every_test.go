package every_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kit/every"
)

// Tick calls its function until it returns false, and returns at once when its context ends.
func TestTick(t *testing.T) {
	calls := 0
	every.Tick(context.Background(), time.Millisecond, func() bool {
		calls++
		return calls < 3
	})
	if calls != 3 {
		t.Fatalf("%d calls, want 3: the third returned false", calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	every.Tick(ctx, time.Hour, func() bool {
		t.Fatal("called after its context ended")
		return false
	})
}
