package metrics_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/metrics"
)

// scrape returns what the metrics handler serves.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// A provider's requests are counted by the class of their status, or as errors when no answer
// came, and timed.
func TestProviderRequests(t *testing.T) {
	m := metrics.New()
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer provider.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	client := &http.Client{Transport: m.Provider(http.DefaultTransport)}
	for _, url := range []string{provider.URL + "/ok", provider.URL + "/ok", provider.URL + "/fail", closed} {
		res, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	body := scrape(t, m)
	for _, want := range []string{
		`agentplane_provider_requests_total{outcome="2xx"} 2`,
		`agentplane_provider_requests_total{outcome="5xx"} 1`,
		`agentplane_provider_requests_total{outcome="error"} 1`,
		`agentplane_provider_request_duration_seconds_count 4`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}

func TestRunCyclesEventsAndOutbox(t *testing.T) {
	m := metrics.New()
	m.RunCycle()
	m.RunCycle()
	m.OutboxBacklog(7)
	body := scrape(t, m)
	for _, want := range []string{"agentplane_run_cycles_total 2", "agentplane_outbox_backlog 7"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
}

// The metrics show the heap live as of the last collection beside the process's resident set:
// the load's leak check reads both.
func TestLiveHeapShown(t *testing.T) {
	body := scrape(t, metrics.New())
	for _, want := range []string{"\ngo_gc_heap_live_bytes ", "\nprocess_resident_memory_bytes "} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in the metrics", strings.TrimSpace(want))
		}
	}
}
