package workers

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/metrics"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// Triggers start workflow runs for domain events: one durable JetStream consumer per deployment
// (named Durable, after its queue), shared by the worker replicas. An event is acknowledged once
// its runs are queued; one that fails is delivered again after RetryDelay.
type Triggers struct {
	NATS       *nats.Conn
	Durable    string
	Runs       *workflows.Runs
	RetryDelay time.Duration
}

// consumeRetry is how long the triggers wait before trying again to create their consumer while
// NATS cannot (it is down).
const consumeRetry = 3 * time.Second

// serve consumes until ctx ends, calling started once the consumer is in place.
func (t Triggers) serve(ctx context.Context, m *metrics.Metrics, log *slog.Logger, started func()) {
	log = log.With("component", "triggers")
	for {
		c, err := events.Consume(ctx, t.NATS, events.ConsumeConfig{Durable: t.Durable, New: true, RetryDelay: t.RetryDelay},
			func(ctx context.Context, ev outbox.Event) error {
				if m != nil {
					m.Event(ev.Type, ev.OccurredAt)
				}
				return t.Runs.OnEvent(ctx, ev)
			}, log)
		if err == nil {
			started()
			<-ctx.Done()
			c.Stop()
			return
		}
		log.Warn("workflow triggers not consuming yet", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(consumeRetry):
		}
	}
}
