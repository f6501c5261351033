package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/llm"
)

// BenchmarkAgentRun measures agent runs (reasoning mode agent), which go through the task
// queue: the API side stores the user's message and the execution and enqueues a task; a real
// worker (asynq, concurrency 4, woken by the task's enqueue: see queue.Waiter) claims the
// execution and runs its cycles against the fake provider on loopback. Every run makes two model
// calls: a list_deals tool call, then the answer. Each finished execution is
// deleted (see forget), so that every run meets the same store.
//
//   - QueueLatency: from agentruns.Service.Chat returning (the task is enqueued) to the arrival at
//     the provider of the run's first model request (the first cycle's start), one run at a
//     time, the worker idle for 20-40 ms before each enqueue (its look for tasks waiting for a
//     wake). Reports p50/p99.
//   - Throughput: complete runs per second with 4 (the worker's concurrency) and 16 runs in
//     flight (agentruns.Service.Chat, then Follow until the answer), against the same two model
//     calls made directly with the provider client at the same concurrency. Reports p50/p99 per
//     run, runs/s, the CPU time of this process per run, and for the platform its rate as a
//     fraction of the direct one (x-direct).
//   - EndToEnd: POST /v1/bot/chat with "reasoning_mode": "agent", not streamed (the API waits
//     for the run), at 1 client; with the direct two calls at 1 client as the baseline.
//
// Use -benchtime 200x or more: the percentiles are over b.N agentruns.
func BenchmarkAgentRun(b *testing.B) {
	fake := providertest.New(b)
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		{Call: &providertest.Call{Name: "list_deals", Arguments: "{}"}},
		{Reply: "You have no deals yet."},
	}})
	bb := setup(b, withProvider(fake.URL), withRateLimit(0))
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 64
	botID := createBench(b, bb)
	benchPost(b, bb, http.MethodPut, "/v1/bot/update", map[string]any{"project_id": bb.project.ID, "bot_id": botID, "provider_key": "k"})
	bb.startWorker(b, workerOptions{})
	ctx := context.Background()
	bot, err := bb.agents.Get(ctx, bb.project.ID, botID)
	if err != nil {
		b.Fatal(err)
	}
	asker := chats.Asker{AccountID: bb.project.AccountID}

	var seq atomic.Int64
	// start starts a run of a new message (which tells its provider requests apart) and returns
	// it with the message and the time chats.Service.Chat returned (after the enqueue).
	start := func() (agentruns.Execution, string, time.Time, error) {
		msg := fmt.Sprintf("Which deals are open? (run %d)", seq.Add(1))
		out, err := bb.chats.Chat(ctx, bb.project.ID, bot, asker, chats.Input{Message: &msg, ReasoningMode: "agent"}, nil)
		enqueued := time.Now()
		if err != nil {
			return agentruns.Execution{}, "", time.Time{}, err
		}
		if out.RunID == "" {
			return agentruns.Execution{}, "", time.Time{}, fmt.Errorf("answered without a run: %+v", out.Reply)
		}
		e, err := bb.runs.Get(ctx, bb.project.ID, bot.ID, out.RunID)
		return e, msg, enqueued, err
	}
	// finish waits for the run's answer.
	finish := func(e agentruns.Execution) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		e, err := bb.runs.Follow(ctx, e, 0, func(agentruns.Entry) error { return nil }, nil)
		if err != nil {
			return err
		}
		if e.Status != agentruns.StatusDone {
			return fmt.Errorf("run %s ended %s: %+v", e.ID, e.Status, e.Log)
		}
		return nil
	}
	platform := func() error {
		e, _, _, err := start()
		if err != nil {
			return err
		}
		return finish(e)
	}

	direct := provider.NewOpenAI(provider.Config{BaseURL: fake.URL, APIKey: "k", Timeout: 10 * time.Second})
	directRun := func() error {
		msgs := []llm.Message{{Role: llm.RoleSystem, Content: "You are helpful. You can use tools."}, {Role: llm.RoleUser, Content: "Which deals are open?"}}
		req := llm.Request{Model: "gpt-4o-mini", MaxTokens: 1024, Messages: msgs, Tools: bb.tools.Offer()}
		rep, err := direct.Stream(ctx, req, func(string) error { return nil })
		if err != nil {
			return err
		}
		if len(rep.ToolCalls) != 1 {
			return fmt.Errorf("no tool call: %+v", rep)
		}
		call := rep.ToolCalls[0]
		req.Messages = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
			llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: `{"deals":[],"total":0}`})
		rep, err = direct.Stream(ctx, req, func(string) error { return nil })
		if err == nil && (rep.Content == "" || len(rep.ToolCalls) > 0) {
			err = fmt.Errorf("no answer: %+v", rep)
		}
		return err
	}

	chatBody, _ := json.Marshal(map[string]any{"project_id": bb.project.ID, "bot_id": botID, "message": "Which deals are open?", "reasoning_mode": "agent"})
	endToEnd := func() error {
		res, err := benchDo(bb, http.MethodPost, "/v1/bot/chat", chatBody)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var out struct {
			Chat struct {
				IsComplete bool `json:"isComplete"`
			} `json:"chat"`
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK || !out.Chat.IsComplete {
			return fmt.Errorf("status %d, %+v, %v", res.StatusCode, out, err)
		}
		return nil
	}

	b.Run("QueueLatency", func(b *testing.B) {
		lat := make([]time.Duration, b.N)
		for i := range b.N {
			b.StopTimer()
			time.Sleep(20*time.Millisecond + rand.N(20*time.Millisecond))
			b.StartTimer()
			e, msg, enqueued, err := start()
			if err != nil {
				b.Fatal(err)
			}
			if err := finish(e); err != nil {
				b.Fatal(err)
			}
			first, ok := firstRequest(fake, msg)
			if !ok {
				b.Fatalf("no provider request for %q", msg)
			}
			lat[i] = first.Sub(enqueued)
		}
		report(b, lat)
	})
	for _, n := range []int{4, 16} {
		var directRate float64
		b.Run(fmt.Sprintf("Throughput/Direct/inflight=%d", n), func(b *testing.B) { directRate = inFlight(b, n, directRun) })
		b.Run(fmt.Sprintf("Throughput/Platform/inflight=%d", n), func(b *testing.B) {
			if rate := inFlight(b, n, platform); directRate > 0 {
				b.ReportMetric(rate/directRate, "x-direct")
			}
		})
	}
	b.Run("EndToEnd/Direct/clients=1", func(b *testing.B) { inFlight(b, 1, directRun) })
	b.Run("EndToEnd/Platform/clients=1", func(b *testing.B) { inFlight(b, 1, endToEnd) })
}

// firstRequest returns when the first provider request carrying the user message msg arrived.
func firstRequest(fake *providertest.Server, msg string) (time.Time, bool) {
	var first time.Time
	for _, r := range fake.Requests() {
		if (first.IsZero() || r.At.Before(first)) && slices.ContainsFunc(r.Messages, func(m llm.Message) bool {
			return m.Role == llm.RoleUser && m.Content == msg
		}) {
			first = r.At
		}
	}
	return first, !first.IsZero()
}

// inFlight runs op b.N times with n at a time, reports p50/p99 per op, ops (runs) per second
// and the CPU time of this process per op, and returns the rate.
func inFlight(b *testing.B, n int, op func() error) float64 {
	b.Helper()
	times := make([]time.Duration, b.N)
	next := make(chan int, b.N)
	for i := range b.N {
		next <- i
	}
	close(next)
	var (
		wg     sync.WaitGroup
		failed atomic.Pointer[error]
	)
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for range n {
		wg.Go(func() {
			for i := range next {
				t := time.Now()
				if err := op(); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
				times[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	report(b, times)
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "runs/s")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/run")
	return rate
}

// cpuTime is the CPU time this process has used: the API, the worker, the fake provider and
// the embedded store, not Redis or NATS, which run apart.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDo sends body to the API with the bundle's key.
func benchDo(bb *bundle, method, path string, body []byte) (*http.Response, error) {
	r, err := http.NewRequest(method, bb.client.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+bb.key)
	r.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(r)
}

// benchPost sends body as JSON and fails unless the API answers 200.
func benchPost(b *testing.B, bb *bundle, method, path string, body map[string]any) {
	b.Helper()
	raw, _ := json.Marshal(body)
	res, err := benchDo(bb, method, path, raw)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(res.Body)
		b.Fatalf("%s %s: status %d: %s", method, path, res.StatusCode, msg)
	}
}
