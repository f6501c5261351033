package events

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplane/agentplane/shared/outbox"
)

// scope is the instrumentation scope of the spans of this package.
const scope = "github.com/agentplane/agentplane/events"

// headerCarrier carries trace context in NATS message headers under the W3C names as they are
// ("traceparent"), since NATS headers, unlike HTTP ones, are case-sensitive.
type headerCarrier nats.Header

var _ propagation.TextMapCarrier = headerCarrier{}

func (h headerCarrier) Get(key string) string { return nats.Header(h).Get(key) }
func (h headerCarrier) Set(key, value string) { nats.Header(h).Set(key, value) }
func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// startSpan starts the span of an event's publish or processing, named after the operation and
// the event type (the subject holds the project id, so it is an attribute, not the name), as a
// child of parent's span.
func startSpan(parent context.Context, op string, kind trace.SpanKind, ev outbox.Event, subject string) (context.Context, trace.Span) {
	return otel.Tracer(scope).Start(parent, op+" "+ev.Type, trace.WithSpanKind(kind), trace.WithAttributes(
		semconv.MessagingSystemKey.String("nats"),
		semconv.MessagingOperationName(op),
		semconv.MessagingDestinationName(subject),
		semconv.MessagingMessageID(ev.ID),
		attribute.String("agentplane.event.type", ev.Type),
	))
}
