// Package lease keeps a lease on a piece of work renewed while the work goes on.
package lease

import (
	"context"
	"errors"
	"time"

	"github.com/agentplane/agentplane/shared/kit/every"
	"github.com/agentplane/agentplane/shared/kit/opcount"
)

// errLost is the cause of a held context that ended because its lease was lost.
var errLost = errors.New("lease: lost")

// Hold runs do while renewing its lease every interval (renew reports whether the holder still
// has it; a renewal that fails is tried again at the next tick). do's context ends once a
// renewal finds the lease gone. Renewals are not counted among do's store commands (opcount).
// Hold returns once do has and the renewal has stopped: whether the lease was lost, and do's
// error.
func Hold(parent context.Context, interval time.Duration, renew func(context.Context) (bool, error), do func(context.Context) error) (lost bool, err error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		every.Tick(ctx, interval, func() bool {
			ok, err := renew(opcount.Without(ctx))
			if err == nil && !ok {
				cancel(errLost)
				return false
			}
			return true
		})
	}()
	err = do(ctx)
	cancel(nil)
	<-renewed
	return errors.Is(context.Cause(ctx), errLost), err
}
