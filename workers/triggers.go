package workers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/metrics"
	"github.com/agentplane/agentplane/shared/adapters/tracing"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tasks"
	"github.com/agentplane/agentplane/shared/workflows"
)

// Triggers start workflow runs for domain events: one durable JetStream consumer per deployment
// (named Durable, after its queue), shared by the worker replicas. An event is acknowledged once
// its runs are queued; one that fails is delivered again after RetryDelay. The worker that starts
// a run runs it at once while it has room (see here); otherwise the run waits for its task.
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
func (t Triggers) serve(ctx context.Context, h *here, m *metrics.Metrics, log *slog.Logger, started func()) {
	log = log.With("component", "triggers")
	for {
		c, err := events.Consume(ctx, t.NATS, events.ConsumeConfig{Durable: t.Durable, New: true, RetryDelay: t.RetryDelay},
			func(ctx context.Context, ev outbox.Event) error {
				if m != nil {
					m.Event(ev.Type, ev.OccurredAt)
				}
				hold, ok := h.take()
				held, err := t.Runs.OnEvent(ctx, ev, hold)
				if ok {
					h.run(ctx, held)
				}
				return err
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

// here runs the workflow runs this worker's triggers start, in this process and at once: such a
// run does not wait for an idle worker to look for its task again (every Poll, 10 ms by
// default). It takes as many events' runs at a time as the worker's concurrency; beyond that,
// runs wait for their tasks as others do. Each run is held under a lease, and its task, held
// back until the lease ends, takes it over if this process dies or stops (the task is removed
// once the run ends here).
type here struct {
	x     *workflows.Executor
	runs  *workflows.Runs
	base  context.Context
	slots chan struct{}
	// inflight counts the runs under way, for the worker's shutdown to wait for them.
	inflight *sync.WaitGroup
	metrics  *metrics.Metrics
	log      *slog.Logger
}

// take reserves room for the runs of one event: the lease to store them under, and true; nil
// and false when there is no room.
func (h *here) take() (*workflows.Lease, bool) {
	select {
	case h.slots <- struct{}{}:
		l := h.x.Lease()
		return &l, true
	default:
		return nil, false
	}
}

// run runs the held runs of one event, one after the other, in the background, in a span of
// the event's trace, and gives the room take reserved back once they are done (at once when
// the event started none).
func (h *here) run(evctx context.Context, held []workflows.Run) {
	if len(held) == 0 {
		<-h.slots
		return
	}
	h.inflight.Add(1)
	go func() {
		defer h.inflight.Done()
		defer func() { <-h.slots }()
		for _, r := range held {
			h.one(trace.ContextWithSpanContext(h.base, trace.SpanContextFromContext(evctx)), r)
		}
	}()
}

// one runs r as its task would, counted as a task of its type.
func (h *here) one(ctx context.Context, r workflows.Run) {
	ctx, span := otel.Tracer(scope).Start(ctx, tasks.TypeWorkflowRun, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("workflow.run.id", r.UUID)))
	err := measured(ctx, h.metrics, tasks.TypeWorkflowRun, func(ctx context.Context) error {
		err := h.x.Run(ctx, r, false)
		if err == nil {
			if ferr := h.runs.Forget(context.WithoutCancel(ctx), r); ferr != nil {
				h.log.Warn("the task of a workflow run that ended was not removed; it will find the run ended", "run_id", r.UUID, "error", ferr)
			}
		}
		return err
	})
	tracing.End(span, err)
	if err != nil {
		h.log.Warn("workflow run left to its task", "run_id", r.UUID, "error", err)
	}
}
