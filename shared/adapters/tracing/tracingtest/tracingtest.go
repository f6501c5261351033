// Package tracingtest is an OpenTelemetry collector for tests: a real HTTP server (package
// httptest) that takes OTLP/HTTP protobuf exports on /v1/traces, as a collector's receiver
// does, and keeps the spans for the test to read. Its URL is an OTEL_EXPORTER_OTLP_ENDPOINT.
package tracingtest

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a span as the collector received it; ids are hex, attribute values their text.
type Span struct {
	TraceID    string
	SpanID     string
	ParentID   string // "" for a root span
	Name       string
	Kind       tracepb.Span_SpanKind
	Attributes map[string]string
	// Resource holds the attributes of the process that sent the span (service.name, ...).
	Resource map[string]string
}

// Collector is the running receiver.
type Collector struct {
	URL string

	mu    sync.Mutex
	spans []Span
}

// New starts a collector that stops when t ends.
func New(t testing.TB) *Collector {
	c := &Collector{}
	srv := httptest.NewServer(http.HandlerFunc(c.export))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *Collector) export(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req collectorpb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, Span{TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Name: s.Name, Kind: s.Kind, Attributes: attributes(s.Attributes), Resource: res})
			}
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch v := kv.Value.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(v.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = fmt.Sprint(v.DoubleValue)
		default:
			m[kv.Key] = kv.Value.String()
		}
	}
	return m
}

// Spans returns the spans received so far, in the order they arrived.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Trace returns the spans received so far of the trace with id traceID (hex).
func (c *Collector) Trace(traceID string) []Span {
	var out []Span
	for _, s := range c.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}
