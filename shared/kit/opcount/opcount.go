// Package opcount counts operations made on behalf of one piece of work (an HTTP request): the
// work's context carries a count, and whatever makes an operation with that context (the store's
// command monitor) adds to it.
package opcount

import (
	"context"
	"sync/atomic"
)

type key struct{}

// With returns ctx carrying a new count, and the count.
func With(ctx context.Context) (context.Context, *atomic.Int64) {
	n := new(atomic.Int64)
	return context.WithValue(ctx, key{}, n), n
}

// Add counts one operation for the work of ctx, when it carries a count.
func Add(ctx context.Context) {
	if n, ok := ctx.Value(key{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}
