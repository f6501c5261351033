// Package tracing sets up OpenTelemetry tracing for a process: W3C trace context (and baggage)
// propagation always, and, when an OTLP/HTTP endpoint is configured, spans batched and exported
// to it. The provider and the propagator are the process's global ones (otel.SetTracerProvider,
// otel.SetTextMapPropagator), which the spans of the API, the guarded HTTP client, the events
// and the tasks use.
package tracing

import (
	"context"
	"log/slog"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// serviceName is the service.name of every span agentplane exports.
const serviceName = "agentplane"

// roleKey is the resource attribute naming the role of the process that made a span.
const roleKey = attribute.Key("agentplane.role")

// Config says whether and where spans go.
type Config struct {
	// Endpoint is the base URL of an OTLP/HTTP receiver (OTEL_EXPORTER_OTLP_ENDPOINT); spans go
	// to its /v1/traces. Empty turns tracing off.
	Endpoint string
	// Role is the process's role, recorded as agentplane.role.
	Role string
	// Ratio is the share of new traces recorded; a span whose parent came from elsewhere
	// follows the parent's decision.
	Ratio float64
	// Logger receives export errors; required with an Endpoint.
	Logger *slog.Logger
}

// Setup installs the propagator and the tracer provider of cfg as the process's global ones and
// returns the provider's shutdown, which flushes the spans not yet exported; export errors go to cfg.Logger. With
// no endpoint the provider is a no-op one: no span is recorded and nothing is exported, while
// trace context that arrives with a request still travels on to the tasks, events and webhooks
// it causes.
func Setup(ctx context.Context, cfg Config) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if cfg.Endpoint == "" {
		otel.SetTracerProvider(noop.NewTracerProvider())
		return func(context.Context) error { return nil }, nil
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { cfg.Logger.Warn("tracing", "error", err) }))
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(tracesURL(cfg.Endpoint)))
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(redacting{exp}),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(serviceName), roleKey.String(cfg.Role))),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.Ratio))),
	)
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// End ends span, marking it failed by err when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// tracesURL is where an OTLP/HTTP receiver at base takes spans.
func tracesURL(base string) string {
	return strings.TrimSuffix(base, "/") + "/v1/traces"
}

// redacting exports spans without the path and query of the URLs they name: a webhook's URL
// often holds its secret (Slack's, Discord's), and HTTP client instrumentation records the full
// URL of each request.
type redacting struct{ sdktrace.SpanExporter }

// urlKeys are the attributes of HTTP client spans that hold a full URL (semantic conventions
// before and since v1.21).
var urlKeys = []attribute.Key{"http.url", "url.full"}

func (r redacting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = redactedSpan{s}
	}
	return r.SpanExporter.ExportSpans(ctx, out)
}

type redactedSpan struct{ sdktrace.ReadOnlySpan }

func (s redactedSpan) Attributes() []attribute.KeyValue {
	attrs := s.ReadOnlySpan.Attributes()
	out := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		out[i] = a
		for _, k := range urlKeys {
			if a.Key == k {
				out[i] = k.String(origin(a.Value.AsString()))
			}
		}
	}
	return out
}

// origin is the scheme and host of raw, or "" when raw is no URL.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
