package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// BenchmarkChat measures what the platform adds to a model call: a standard chat through the
// API (auth, agent, chat and messages in the store, retrieval, events, provider call) against
// the same provider called directly, side by side against the fake provider on loopback. It
// reports latency p50/p99 at 1 and 16 concurrent clients, requests per second, and the time to
// the first streamed delta.
func BenchmarkChat(b *testing.B) {
	fake := providertest.New(b)
	fake.Set(providertest.Behavior{Reply: "The shop closes at six.", Chunks: 3})
	bb := setup(b, withProvider(fake.URL), withRateLimit(0))
	botID := createBench(b, bb)
	direct := provider.NewOpenAI(provider.Config{BaseURL: fake.URL, APIKey: "k", Timeout: 10 * time.Second})
	req := provider.Request{Model: "gpt-4o-mini", MaxTokens: 1024, Messages: []provider.Message{{Role: "system", Content: "You are helpful."}, {Role: "user", Content: "When do you close?"}}}
	body, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "When do you close?"})
	streamBody, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "When do you close?", "stream": true})
	post := func(body []byte) (*http.Response, error) {
		r, _ := http.NewRequest(http.MethodPost, bb.client.URL+"/v1/bot/chat", bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+bb.key)
		r.Header.Set("Content-Type", "application/json")
		return http.DefaultClient.Do(r)
	}
	platform := func() error {
		res, err := post(body)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	directCall := func() error { _, err := direct.Complete(context.Background(), req); return err }
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 64

	for _, clients := range []int{1, 16} {
		for _, c := range []struct {
			name string
			op   func() error
		}{{"Direct", directCall}, {"Platform", platform}} {
			b.Run(fmt.Sprintf("%s/clients=%d", c.name, clients), func(b *testing.B) {
				concurrently(b, clients, c.op)
			})
		}
	}
	b.Run("TimeToFirstDelta/Direct", func(b *testing.B) {
		firstByte(b, func() (time.Duration, error) {
			var first time.Duration
			start := time.Now()
			_, err := direct.Stream(context.Background(), req, func(string) error {
				if first == 0 {
					first = time.Since(start)
				}
				return nil
			})
			return first, err
		})
	})
	b.Run("TimeToFirstDelta/Platform", func(b *testing.B) {
		firstByte(b, func() (time.Duration, error) {
			start := time.Now()
			res, err := post(streamBody)
			if err != nil {
				return 0, err
			}
			defer res.Body.Close()
			var first time.Duration
			for ev, err := range sse.Read(res.Body, nil) {
				if err != nil {
					return 0, err
				}
				if ev.Type == "delta" && first == 0 {
					first = time.Since(start)
				}
			}
			return first, nil
		})
	})
}

// firstByte runs op b.N times and reports the p50/p99 of the durations it returns.
func firstByte(b *testing.B, op func() (time.Duration, error)) {
	b.Helper()
	times := make([]time.Duration, b.N)
	for i := range b.N {
		d, err := op()
		if err != nil || d == 0 {
			b.Fatal("no first delta", err)
		}
		times[i] = d
	}
	report(b, times)
}

// concurrently runs op b.N times from clients goroutines and reports p50/p99 latency and
// requests per second.
func concurrently(b *testing.B, clients int, op func() error) {
	b.Helper()
	times := make([]time.Duration, b.N)
	var (
		next = make(chan int, b.N)
		wg   sync.WaitGroup
		errs = make(chan error, clients)
	)
	for i := range b.N {
		next <- i
	}
	close(next)
	b.ResetTimer()
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for i := range next {
				t := time.Now()
				if err := op(); err != nil {
					errs <- err
					return
				}
				times[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	report(b, times)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
}

func report(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}

// createBench creates the benchmark's agent.
func createBench(b *testing.B, bb *bundle) string {
	b.Helper()
	raw, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "name": "Bench", "model": "gpt-4o-mini"})
	r, _ := http.NewRequest(http.MethodPost, bb.client.URL+"/v1/bot/create", bytes.NewReader(raw))
	r.Header.Set("Authorization", "Bearer "+bb.key)
	r.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Bot struct{ UUID string } }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Bot.UUID == "" {
		b.Fatal("create bot", err)
	}
	return out.Bot.UUID
}
