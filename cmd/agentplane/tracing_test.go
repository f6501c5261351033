package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/tracing/tracingtest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
)

// One trace runs from a deal update through the API, the outbox's event on NATS, the workflow
// run's asynq task and the webhook that run delivers: the caller's traceparent reaches the
// webhook's receiver, and the collector gets a span of each hop, each the child of the one
// before, from the process that made it. The worker runs as a process of its own, so the
// context crosses NATS and Redis in message and task headers, as it does in production.
//
// Tracing sets the process's global provider: this test does not run in parallel.
func TestTraceFromRequestToWebhook(t *testing.T) {
	collector := tracingtest.New(t)
	delivered := make(chan string, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { delivered <- r.Header.Get("Traceparent") }))
	defer hook.Close()

	env := serviceEnv(t)
	env["AGENTPLANE_ALLOW_PRIVATE_NETWORKS"] = "true"
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.URL
	getenv := func(k string) string { return env[k] }
	if err := run(context.Background(), []string{"migrate"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	key := createAccount(t, env)
	api := start(t, env, "api")
	c := apitest.Dial(t, "http://"+waitFor(t, api.stderr, listening, api)[1])
	do := func(method, path string, body any, header map[string]string) map[string]any {
		t.Helper()
		res := c.Do(apitest.Request{Method: method, Path: path, Key: key, Body: body, Header: header})
		if res.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, res.Status, res.Body)
		}
		return res.JSON(t)
	}
	project := do("POST", "/v1/projects", map[string]any{"name": "p"}, nil)["project"].(map[string]any)["id"].(string)
	bot := do("POST", "/v1/bot/create", map[string]any{"project_id": project, "name": "n", "model": "m"}, nil)["bot"].(map[string]any)["id"].(string)
	do("POST", "/v1/bot/workflow/create", map[string]any{"project_id": project, "bot_id": bot, "name": "hook",
		"trigger_type": "event", "trigger_event": "deal.updated",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL + "/deals", "body": map[string]any{"title": "{{data.title}}"}}}}}, nil)
	deal := do("POST", "/v1/bot/crm/deals", map[string]any{"project_id": project, "bot_id": bot, "title": "Big"}, nil)["deal"].(map[string]any)["uuid"].(string)

	worker := spawn(t, env, "worker")
	waitForConsumer(t, "workflows-"+env["AGENTPLANE_QUEUE"])
	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	do("PUT", "/v1/bot/crm/deals/"+deal, map[string]any{"project_id": project, "bot_id": bot, "title": "Bigger"},
		map[string]string{"traceparent": "00-" + traceID + "-" + callerSpan + "-01"})
	var traceparent string
	select {
	case traceparent = <-delivered:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery")
	}
	if !strings.HasPrefix(traceparent, "00-"+traceID+"-") {
		t.Fatalf("the webhook's traceparent %q is not of trace %s", traceparent, traceID)
	}

	// Stopping the roles flushes their spans.
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := worker.Wait(); err != nil {
		t.Fatalf("worker exit: %v", err)
	}
	api.stop(t)

	spans := collector.Trace(traceID)
	byName := map[string]tracingtest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		for k, v := range s.Attributes {
			if strings.Contains(v, key) || strings.Contains(v, "Bearer") {
				t.Errorf("span %s records the API key in %s", s.Name, k)
			}
		}
	}
	parent := callerSpan
	for _, want := range []struct {
		name, role string
		kind       tracepb.Span_SpanKind
	}{
		{"/v1/bot/crm/deals/:deal_id", "api", tracepb.Span_SPAN_KIND_SERVER},
		{"publish deal.updated", "api", tracepb.Span_SPAN_KIND_PRODUCER},
		{"process deal.updated", "worker", tracepb.Span_SPAN_KIND_CONSUMER},
		{"workflow:run", "worker", tracepb.Span_SPAN_KIND_CONSUMER},
		{"HTTP POST", "worker", tracepb.Span_SPAN_KIND_CLIENT},
	} {
		s, ok := byName[want.name]
		if !ok {
			t.Fatalf("no span %q in the trace; it has %s", want.name, names(spans))
		}
		if s.ParentID != parent || s.Kind != want.kind || s.Resource["service.name"] != "agentplane" || s.Resource["agentplane.role"] != want.role {
			t.Errorf("span %q: parent %s (want %s), kind %v (want %v), resource %v (want role %s)", want.name, s.ParentID, parent, s.Kind, want.kind, s.Resource, want.role)
		}
		parent = s.SpanID
	}
	if webhook := byName["HTTP POST"]; traceparent != "00-"+traceID+"-"+webhook.SpanID+"-01" || webhook.Attributes["http.url"] != hook.URL {
		t.Errorf("webhook span %+v, delivery's traceparent %s", webhook, traceparent)
	}
}

// waitForConsumer waits until the durable consumer name exists on the event stream: the
// workflow triggers read only the events that come after it.
func waitForConsumer(t *testing.T, name string) {
	t.Helper()
	js, err := jetstream.New(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if _, err := js.Consumer(ctx, events.Stream, name); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no consumer %s", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func names(spans []tracingtest.Span) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}
