package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/sources"
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
	// lease is how long the worker holds a run without renewing it.
	lease time.Duration
}

// startWorker runs a real worker, built by the composition root as a worker process is, on the
// test's queue and stores until the test ends, and returns its ingester (whose clock a test may
// set). It returns once the worker takes tasks and its workflow triggers consume.
func (b *bundle) startWorker(t testing.TB, o workerOptions) *sources.Ingester {
	t.Helper()
	ingester, _ := b.stoppableWorker(t, o)
	return ingester
}

// stoppableWorker is startWorker, and a function that stops the worker as its process stops on
// SIGTERM (it stops taking tasks and waits for those under way), returning once it has stopped.
func (b *bundle) stoppableWorker(t testing.TB, o workerOptions) (*sources.Ingester, func()) {
	t.Helper()
	cfg := b.app.Cfg
	cfg.Role, cfg.AllowPrivate = "worker", !o.guarded
	if o.fetchTimeout != 0 {
		cfg.FetchTimeout = o.fetchTimeout
	}
	if o.maxPages != 0 {
		cfg.CrawlMaxPages = o.maxPages
	}
	cfg.FetchMaxBytes = o.maxBytes
	if o.lease != 0 {
		cfg.RunLease = o.lease
	}
	w := app.New(cfg, b.log, b.app.Conns)
	t.Cleanup(w.Close)
	// The API's /metrics shows the worker's too, as one `dev` process's does.
	w.Metrics = b.app.Metrics
	d, err := w.Worker()
	if err != nil {
		t.Fatal(err)
	}
	d.RetryDelay = func(int, error, *asynq.Task) time.Duration { return 20 * time.Millisecond }
	d.RetryCheckInterval = 100 * time.Millisecond
	d.Triggers.RetryDelay = 100 * time.Millisecond
	started := make(chan struct{})
	d.Started = func() { close(started) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- workers.Serve(ctx, d) }()
	select {
	case <-started:
	case err := <-done:
		cancel()
		t.Fatalf("the worker stopped before it started: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return d.Sources, stop
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
