package opcount_test

import (
	"context"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/opcount"
)

// Operations made with the work's context count for it; those made without a count, or with one
// taken away, do not.
func TestCounts(t *testing.T) {
	ctx, n := opcount.With(context.Background())
	opcount.Add(ctx)
	opcount.Add(ctx)
	opcount.Add(opcount.Without(ctx))
	opcount.Add(context.Background())
	if got := n.Load(); got != 2 {
		t.Fatalf("counted %d operations, want the 2 made with the work's context", got)
	}
}
