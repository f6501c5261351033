// Package every runs a function at an interval until its context ends.
package every

import (
	"context"
	"time"
)

// Tick calls f every interval until ctx ends or f returns false.
func Tick(ctx context.Context, interval time.Duration, f func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !f() {
				return
			}
		}
	}
}
