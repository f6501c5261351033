package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/encoding/json"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplane/agentplane/shared/adapters/tracing"
	"github.com/agentplane/agentplane/shared/outbox"
)

// ErrDisconnected is returned by Publish while NATS is unreachable; the event stays in its
// outbox and is relayed later.
var ErrDisconnected = errors.New("events: nats is disconnected")

// Subject is where an event is published: "events.<project_id>.<type>".
func Subject(ev outbox.Event) string {
	return SubjectPrefix + ev.ProjectID + "." + ev.Type
}

// Publisher publishes domain events to the JetStream stream.
type Publisher struct {
	nc *nats.Conn
	js jetstream.JetStream
}

var _ outbox.Publisher = (*Publisher)(nil)

// NewPublisher returns a publisher on nc.
func NewPublisher(nc *nats.Conn) (*Publisher, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &Publisher{nc: nc, js: js}, nil
}

// Publish stores ev in the stream, with its id as the message id: a second publish of the same
// event within the stream's duplicate window is dropped. The publish is a span of the event's
// trace (the change's, whoever publishes it), and its context goes in the message's headers.
func (p *Publisher) Publish(ctx context.Context, ev outbox.Event) error {
	if !p.nc.IsConnected() {
		return ErrDisconnected
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	msg := &nats.Msg{Subject: Subject(ev), Data: data, Header: nats.Header{}}
	ctx, span := startSpan(otel.GetTextMapPropagator().Extract(ctx, propagation.MapCarrier(ev.Trace)), "publish", trace.SpanKindProducer, ev, msg.Subject)
	otel.GetTextMapPropagator().Inject(ctx, headerCarrier(msg.Header))
	_, err = p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(ev.ID))
	tracing.End(span, err)
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum) {
		return fmt.Errorf("events: publish %s of %d bytes: %w: %w", ev.Type, len(data), outbox.ErrUnpublishable, err)
	}
	if err != nil {
		return fmt.Errorf("events: publish %s: %w", ev.Type, err)
	}
	return nil
}
