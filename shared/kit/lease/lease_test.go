package lease_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kit/lease"
)

// The work's context ends when a renewal finds the lease gone, and Hold says so; renewals that
// fail for a passing reason, or that keep the lease, leave the work be.
func TestHold(t *testing.T) {
	t.Parallel()
	t.Run("Lost", func(t *testing.T) {
		t.Parallel()
		var renewals atomic.Int32
		lost, err := lease.Hold(context.Background(), time.Millisecond, func(context.Context) (bool, error) {
			switch renewals.Add(1) {
			case 1:
				return false, errors.New("the store is down for a moment")
			case 2:
				return true, nil
			}
			return false, nil
		}, func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return errors.New("the work's context never ended")
			}
		})
		if !lost || !errors.Is(err, context.Canceled) || renewals.Load() != 3 {
			t.Fatalf("lost %v, err %v after %d renewals; want the work ended by the third", lost, err, renewals.Load())
		}
	})
	t.Run("Kept", func(t *testing.T) {
		t.Parallel()
		var renewals atomic.Int32
		done := errors.New("done")
		lost, err := lease.Hold(context.Background(), time.Millisecond, func(context.Context) (bool, error) {
			renewals.Add(1)
			return true, nil
		}, func(ctx context.Context) error {
			for renewals.Load() < 3 {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				time.Sleep(time.Millisecond)
			}
			return done
		})
		if lost || !errors.Is(err, done) {
			t.Fatalf("lost %v, err %v; want the work's own error with the lease kept", lost, err)
		}
	})
}
