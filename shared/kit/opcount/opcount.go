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

// Without returns ctx carrying no count: what it does is not the work's own (a lease renewed
// on a timer, whose number depends on how long the work takes).
func Without(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, (*atomic.Int64)(nil))
}

// Add counts one operation for the work of ctx, when it carries a count.
func Add(ctx context.Context) {
	if n, ok := ctx.Value(key{}).(*atomic.Int64); ok && n != nil {
		n.Add(1)
	}
}
