package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/encoding/json"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplane/agentplane/shared/adapters/tracing"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Handler handles one event. Returning nil acknowledges it; an error redelivers it after a
// delay; an error wrapped by Permanent drops it.
type Handler func(ctx context.Context, ev outbox.Event) error

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Permanent marks err as final: the event is not redelivered.
func Permanent(err error) error { return permanent{err} }

// Consumer is a durable consumer of the event stream.
type Consumer struct {
	cc  jetstream.ConsumeContext
	log *slog.Logger
}

// ConsumeConfig names a durable consumer and what it reads.
type ConsumeConfig struct {
	// Durable is the consumer's name: replicas with the same name share the work.
	Durable string
	// Filter is a subject filter such as "events.*.deal.>" ("events.>" when empty).
	Filter string
	// RetryDelay is the delay before a failed event is delivered again (default 5s).
	RetryDelay time.Duration
	// MaxDeliver bounds deliveries of one event (default 20).
	MaxDeliver int
	// New starts a consumer created now at the events that come next, rather than at the
	// first event the stream holds; an existing consumer resumes where it was either way.
	New bool
}

// Consume starts delivering events to h with explicit acknowledgement, until Stop. Events are
// delivered at least once: a redelivered event has the same id. Each delivery is handled in a
// span of the event's trace, taken from the message's headers.
func Consume(ctx context.Context, nc *nats.Conn, cfg ConsumeConfig, h Handler, log *slog.Logger) (*Consumer, error) {
	if cfg.Durable == "" {
		return nil, errors.New("events: a durable consumer needs a name")
	}
	if cfg.Filter == "" {
		cfg.Filter = SubjectPrefix + ">"
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 5 * time.Second
	}
	if cfg.MaxDeliver <= 0 {
		cfg.MaxDeliver = 20
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	deliver := jetstream.DeliverAllPolicy
	if cfg.New {
		deliver = jetstream.DeliverNewPolicy
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, Stream, jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		FilterSubject: cfg.Filter,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       time.Minute,
		MaxDeliver:    cfg.MaxDeliver,
		DeliverPolicy: deliver,
	})
	if err != nil {
		return nil, fmt.Errorf("events: consumer %s: %w", cfg.Durable, err)
	}
	c := &Consumer{log: log}
	c.cc, err = cons.Consume(func(msg jetstream.Msg) { c.handle(ctx, msg, h, cfg.RetryDelay) })
	if err != nil {
		return nil, fmt.Errorf("events: consume %s: %w", cfg.Durable, err)
	}
	return c, nil
}

func (c *Consumer) handle(ctx context.Context, msg jetstream.Msg, h Handler, retry time.Duration) {
	var ev outbox.Event
	if err := json.Unmarshal(msg.Data(), &ev); err != nil || ev.ID == "" {
		c.log.Error("dropping a message that is not an event", "subject", msg.Subject(), "error", err)
		_ = msg.Term()
		return
	}
	ctx, span := startSpan(otel.GetTextMapPropagator().Extract(ctx, headerCarrier(msg.Headers())), "process", trace.SpanKindConsumer, ev, msg.Subject())
	err := h(ctx, ev)
	tracing.End(span, err)
	switch {
	case err == nil:
		_ = msg.Ack()
	case errors.As(err, new(permanent)):
		c.log.Error("event handler failed for good", "event_id", ev.ID, "type", ev.Type, "error", err)
		_ = msg.Term()
	default:
		c.log.Warn("event handler failed; redelivering", "event_id", ev.ID, "type", ev.Type, "error", err)
		_ = msg.NakWithDelay(retry)
	}
}

// Stop stops delivering; the event being handled finishes.
func (c *Consumer) Stop() { c.cc.Drain() }
