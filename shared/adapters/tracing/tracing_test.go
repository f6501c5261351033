package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agentplane/agentplane/shared/adapters/tracing"
	"github.com/agentplane/agentplane/shared/adapters/tracing/tracingtest"
)

// The tests change the process's global provider and propagator: none of them runs in parallel.

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

// remote is the context of a request that arrived with a sampled traceparent.
func remote(t *testing.T) context.Context {
	t.Helper()
	return otel.GetTextMapPropagator().Extract(context.Background(),
		propagation.MapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
}

func TestOffUnlessConfigured(t *testing.T) {
	shutdown, err := tracing.Setup(context.Background(), tracing.Config{Role: "api", Ratio: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	if tp := otel.GetTracerProvider(); tp != (noop.TracerProvider{}) {
		t.Fatalf("global provider %T, want the no-op one", tp)
	}
	ctx, span := otel.Tracer("test").Start(remote(t), "work")
	defer span.End()
	if span.IsRecording() {
		t.Fatal("a span is recorded with tracing off")
	}
	// Context that came with a request still travels on.
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	if !strings.HasPrefix(carrier["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
		t.Fatalf("injected %v", carrier)
	}
}

// Spans reach the endpoint when the provider shuts down, with the service and role, and the
// URLs of client requests without their path and query.
func TestExportsToEndpoint(t *testing.T) {
	collector := tracingtest.New(t)
	shutdown, err := tracing.Setup(context.Background(), tracing.Config{Endpoint: collector.URL + "/", Role: "worker", Ratio: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer hook.Close()
	ctx, span := otel.Tracer("test").Start(context.Background(), "work")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL+"/services/T0/B0/hook-secret?sig=query-secret", nil)
	res, err := (&http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := collector.Trace(span.SpanContext().TraceID().String())
	if len(spans) != 2 {
		t.Fatalf("got %+v, want the span and its client request", spans)
	}
	for _, s := range spans {
		if s.Resource["service.name"] != "agentplane" || s.Resource["agentplane.role"] != "worker" {
			t.Errorf("span %s from %v", s.Name, s.Resource)
		}
		for k, v := range s.Attributes {
			if strings.Contains(v, "secret") {
				t.Errorf("span %s has %s=%s", s.Name, k, v)
			}
		}
		if s.Name == "HTTP POST" && s.Attributes["http.url"] != hook.URL {
			t.Errorf("client span's url %q, want %q", s.Attributes["http.url"], hook.URL)
		}
	}
}

// A new trace is recorded at the configured ratio; a request's trace follows its caller.
func TestSamplingFollowsTheCaller(t *testing.T) {
	collector := tracingtest.New(t)
	shutdown, err := tracing.Setup(context.Background(), tracing.Config{Endpoint: collector.URL, Role: "api", Ratio: 0, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		record bool
	}{{"NewTrace", context.Background(), false}, {"SampledCaller", remote(t), true}} {
		t.Run(tt.name, func(t *testing.T) {
			_, span := otel.Tracer("test").Start(tt.ctx, "work", trace.WithSpanKind(trace.SpanKindServer))
			defer span.End()
			if span.IsRecording() != tt.record {
				t.Fatalf("recording %v, want %v", span.IsRecording(), tt.record)
			}
		})
	}
}
