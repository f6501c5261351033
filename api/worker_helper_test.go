package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/workflows"
	"github.com/agentplane/agentplane/workers"
)

func redisOpt(t testing.TB) asynq.RedisConnOpt {
	t.Helper()
	opt, err := asynq.ParseRedisURI(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

func asynqClient(t testing.TB) *asynq.Client {
	t.Helper()
	c := asynq.NewClient(redisOpt(t))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func asynqInspector(t testing.TB) *asynq.Inspector {
	t.Helper()
	i := asynq.NewInspector(redisOpt(t))
	t.Cleanup(func() { _ = i.Close() })
	return i
}

// workerOptions are what a test may change of its worker.
type workerOptions struct {
	// guarded keeps the SSRF guard on (tests' pages are on loopback, so it is off by default).
	guarded      bool
	fetchTimeout time.Duration
	maxBytes     int64
	maxPages     int
	embed        memory.Embedder
}

// startWorker runs a real worker on the test's queue until the test ends, and returns its
// ingester (whose clock a test may set).
func (b *bundle) startWorker(t testing.TB, o workerOptions) *sources.Ingester {
	t.Helper()
	if o.fetchTimeout == 0 {
		o.fetchTimeout = 2 * time.Second
	}
	if o.maxPages == 0 {
		o.maxPages = 20
	}
	fetch := safehttp.New(safehttp.Options{AllowPrivate: !o.guarded, Timeout: o.fetchTimeout, MaxBytes: o.maxBytes})
	ing := sources.NewIngester(store.NewSources(b.db), b.outbox, fetch, o.embed, o.maxPages, b.log, func(string, int) {})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- workers.Serve(ctx, workers.Deps{Logger: b.log, Redis: redisOpt(t), Queue: b.queue, Concurrency: 4,
			ShutdownTimeout: 5 * time.Second, Sources: ing, Runs: b.runner(), Workflows: b.executor(o.guarded), Metrics: b.metrics, Poll: 10 * time.Millisecond, RetryDelay: func(int, error, *asynq.Task) time.Duration { return 20 * time.Millisecond },
			RetryCheckInterval: 100 * time.Millisecond})
	}()
	triggers, err := events.Consume(ctx, b.nats, events.ConsumeConfig{Durable: "workflows-" + b.queue, New: true, RetryDelay: 100 * time.Millisecond},
		b.flows.OnEvent, b.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		triggers.Stop()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ing
}

// runner is a worker's side of agent runs, over the bundle's services.
func (b *bundle) runner() *agentruns.Runner {
	return agentruns.NewRunner(store.NewExecutions(b.db), b.chats, b.agents, b.tools, b.relay, b.log, 3*time.Second, b.metrics.RunCycle)
}

// executor is a worker's side of workflow runs; its webhooks may reach loopback unless guarded.
func (b *bundle) executor(guarded bool) *workflows.Executor {
	hooks := safehttp.New(safehttp.Options{AllowPrivate: !guarded, Timeout: 10 * time.Second, MaxRedirects: -1})
	return workflows.NewExecutor(store.NewWorkflowRuns(b.db), b.outbox, workflows.Actors{Bots: b.agents, CRM: b.deals, Sources: b.srcs,
		Chats: b.chats, Webhooks: hooks}, b.log)
}

// waitSource polls the source until its status is not processing, and returns it.
func (b *bundle) waitSource(t *testing.T, botID, sourceID string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Key: b.key,
			Path: "/v1/bot/source/read?project_id=" + b.project.ID + "&bot_id=" + botID + "&source_id=" + sourceID})
		expect(t, res, http.StatusOK, "")
		src := res.JSON(t)["source"].(map[string]any)
		if src["status"] != sources.StatusProcessing || time.Now().After(deadline) {
			return src
		}
		waitABit()
	}
}
