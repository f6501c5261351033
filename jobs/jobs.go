// Package jobs is the scheduler role: cron entries that enqueue periodic work. It never does the
// work itself, and every enqueue carries a deterministic task id, so two schedulers are harmless.
package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agentplane/agentplane/shared/outbox"
)

// Deps is what the scheduler needs.
type Deps struct {
	Logger *slog.Logger
	// Outbox relays domain events whose inline publish failed (NATS was down).
	Outbox *outbox.Dispatcher
}

// relayInterval is how often the outbox relay looks for events left behind.
const relayInterval = time.Second

// Run runs the schedules and the outbox relay until ctx ends, then waits for entries that are
// enqueueing.
func Run(ctx context.Context, d Deps) error {
	c := cron.New(cron.WithLocation(time.UTC), cron.WithLogger(cronLogger{d.Logger.With("component", "scheduler")}))
	c.Start()
	d.Logger.Info("scheduler started", "entries", len(c.Entries()))
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		d.Outbox.Relay(ctx, relayInterval)
	}()
	<-ctx.Done()
	<-c.Stop().Done()
	<-relayed
	d.Logger.Info("scheduler stopped")
	return nil
}

type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug(msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error(msg, append(kv, "error", err)...)
}
