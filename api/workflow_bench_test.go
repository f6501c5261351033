package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// marks is a webhook receiver that tells when each delivery, named by its body's mark, arrived.
type marks struct {
	*httptest.Server
	mu      sync.Mutex
	arrived map[string]chan time.Time
}

func newMarks(b *testing.B) *marks {
	m := &marks{arrived: map[string]chan time.Time{}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Mark string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		m.wait(body.Mark) <- time.Now()
	}))
	b.Cleanup(m.Close)
	return m
}

// wait is the channel that receives the arrival of mark.
func (m *marks) wait(mark string) chan time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.arrived[mark]
	if !ok {
		ch = make(chan time.Time, 1)
		m.arrived[mark] = ch
	}
	return ch
}

// BenchmarkWorkflowEvent measures a workflow's path from a change to its webhook: a deal update
// through the API emits deal.updated, the worker's trigger consumer starts the workflow's run,
// a worker runs it and delivers the signed webhook to a local receiver. Baseline: the same
// webhook POSTed directly. It reports the latency from the update request to the delivery, and
// the deliveries per second with 16 updates in flight.
func BenchmarkWorkflowEvent(b *testing.B) {
	bb := setup(b, withRateLimit(0))
	botID := createBench(b, bb)
	bb.startWorker(b, workerOptions{})
	hook := newMarks(b)
	benchPost(b, bb, "POST", "/v1/bot/workflow/create", map[string]any{"project_id": bb.project.ID, "bot_id": botID, "name": "hook",
		"trigger_type": "event", "trigger_event": "deal.updated",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL, "body": map[string]any{"mark": "{{data.title}}"}}}}})
	newDeal := func(title string) string {
		raw, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "title": title})
		res, err := benchDo(bb, "POST", "/v1/bot/crm/deals", raw)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		var out struct{ Deal struct{ UUID string } }
		_ = json.NewDecoder(res.Body).Decode(&out)
		return out.Deal.UUID
	}
	var seq int
	var seqMu sync.Mutex
	next := func() string {
		seqMu.Lock()
		defer seqMu.Unlock()
		seq++
		return fmt.Sprintf("m%d", seq)
	}
	// update renames deal to a new mark and waits for the mark's delivery.
	update := func(deal string) (time.Duration, error) {
		mark := next()
		raw, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "title": mark})
		start := time.Now()
		res, err := benchDo(bb, "PUT", "/v1/bot/crm/deals/"+deal, raw)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d", res.StatusCode)
		}
		select {
		case at := <-hook.wait(mark):
			return at.Sub(start), nil
		case <-time.After(30 * time.Second):
			return 0, fmt.Errorf("no delivery of %s", mark)
		}
	}
	direct := func() (time.Duration, error) {
		mark := next()
		raw, _ := json.Marshal(map[string]any{"mark": mark})
		start := time.Now()
		res, err := http.Post(hook.URL, "application/json", bytes.NewReader(raw))
		if err != nil {
			return 0, err
		}
		_ = res.Body.Close()
		return (<-hook.wait(mark)).Sub(start), nil
	}

	b.Run("Latency", func(b *testing.B) {
		for _, c := range []struct {
			name string
			op   func() (time.Duration, error)
		}{{"Direct", direct}, {"Workflow", func() (time.Duration, error) { return update(newDeal("x")) }}} {
			b.Run(c.name, func(b *testing.B) {
				times := make([]time.Duration, b.N)
				for i := range b.N {
					d, err := c.op()
					if err != nil {
						b.Fatal(err)
					}
					times[i] = d
				}
				report(b, times)
			})
		}
	})
	b.Run("Throughput/inflight=16", func(b *testing.B) {
		deals := make([]string, b.N)
		for i := range deals {
			deals[i] = newDeal("x")
		}
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan string)
		errs := make(chan error, b.N)
		for range 16 {
			wg.Go(func() {
				for d := range work {
					if _, err := update(d); err != nil {
						errs <- err
					}
				}
			})
		}
		for _, d := range deals {
			work <- d
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
	})
}

// BenchmarkWorkflowEventFiltered measures what the workflows an event's conditions filter out
// cost the one that runs: a deal update's path to its webhook (as BenchmarkWorkflowEvent) on an
// agent with none, and with 10 more workflows of deal.updated whose condition fails, each event
// leaving a skipped log of each.
func BenchmarkWorkflowEventFiltered(b *testing.B) {
	bb := setup(b, withRateLimit(0))
	bb.startWorker(b, workerOptions{})
	hook := newMarks(b)
	for _, filtered := range []int{0, 10} {
		b.Run(fmt.Sprintf("filtered=%d", filtered), func(b *testing.B) {
			botID := createBench(b, bb)
			workflow := func(conditions []map[string]any) {
				benchPost(b, bb, "POST", "/v1/bot/workflow/create", map[string]any{"project_id": bb.project.ID, "bot_id": botID, "name": "hook",
					"trigger_type": "event", "trigger_event": "deal.updated", "conditions": conditions,
					"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL, "body": map[string]any{"mark": "{{data.title}}"}}}}})
			}
			workflow(nil)
			for range filtered {
				workflow([]map[string]any{{"field": "data.value", "operator": "gte", "value": 1e12}})
			}
			raw, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "title": "x"})
			res, err := benchDo(bb, "POST", "/v1/bot/crm/deals", raw)
			if err != nil {
				b.Fatal(err)
			}
			var out struct{ Deal struct{ UUID string } }
			_ = json.NewDecoder(res.Body).Decode(&out)
			_ = res.Body.Close()
			times := make([]time.Duration, b.N)
			for i := range b.N {
				mark := fmt.Sprintf("f%d-%d", filtered, i)
				raw, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "title": mark})
				start := time.Now()
				res, err := benchDo(bb, "PUT", "/v1/bot/crm/deals/"+out.Deal.UUID, raw)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				select {
				case at := <-hook.wait(mark):
					times[i] = at.Sub(start)
				case <-time.After(30 * time.Second):
					b.Fatalf("no delivery of %s", mark)
				}
			}
			report(b, times)
		})
	}
}
