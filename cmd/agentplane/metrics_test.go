package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

var opsListening = regexp.MustCompile(`"msg":"ops listening"[^\n]*"addr":"([^"]+)"`)

// queueClient enqueues on the Redis of env; closed when t ends.
func queueClient(t *testing.T, env map[string]string) *asynq.Client {
	t.Helper()
	opt, err := redis.ParseURL(env["AGENTPLANE_REDIS_URL"])
	if err != nil {
		t.Fatal(err)
	}
	c := asynq.NewClient(asynq.RedisClientOpt{Addr: opt.Addr, DB: opt.DB, Password: opt.Password})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// get answers a GET of url with its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// metricsUntil reads /metrics at addr until it holds every line of want, or fails after 20 s.
func metricsUntil(t *testing.T, addr string, want ...string) {
	t.Helper()
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, body = get(t, "http://"+addr+"/metrics")
		missing := false
		for _, w := range want {
			missing = missing || !strings.Contains(body, w)
		}
		if !missing {
			return
		}
	}
	t.Fatalf("metrics lack some of %q:\n%s", want, body)
}

// A worker and a scheduler serve their probes and metrics at AGENTPLANE_METRICS_ADDR: the
// worker the depth of its queue and the events its workflow triggers consumed, the scheduler
// the outbox backlog.
func TestWorkerAndSchedulerOps(t *testing.T) {
	t.Parallel()
	env := serviceEnv(t)
	if err := run(context.Background(), []string{"migrate"}, func(k string) string { return env[k] }, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	env["AGENTPLANE_METRICS_ADDR"] = "127.0.0.1:0"
	w := start(t, env, "worker")
	worker := waitFor(t, w.stderr, opsListening, w)[1]
	s := start(t, env, "scheduler")
	scheduler := waitFor(t, s.stderr, opsListening, s)[1]

	for _, addr := range []string{worker, scheduler} {
		if status, body := get(t, "http://"+addr+"/healthz"); status != http.StatusOK {
			t.Fatalf("healthz %d %s", status, body)
		}
		if status, body := get(t, "http://"+addr+"/readyz"); status != http.StatusOK || !strings.Contains(body, `"redis":"ok"`) {
			t.Fatalf("readyz %d %s", status, body)
		}
	}

	queue := env["AGENTPLANE_QUEUE"]
	if _, err := queueClient(t, env).Enqueue(asynq.NewTask("test:later", nil), asynq.Queue(queue), asynq.ProcessIn(time.Hour)); err != nil {
		t.Fatal(err)
	}
	metricsUntil(t, worker,
		`agentplane_queue_tasks{queue="`+queue+`",state="scheduled"} 1`,
		`agentplane_queue_tasks{queue="`+queue+`",state="pending"} 0`,
		`agentplane_queue_latency_seconds{queue="`+queue+`"} `)

	// The worker's consumer starts at the events that come after it: publish until it counts one.
	pub, err := events.NewPublisher(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_ = pub.Publish(ctx, outbox.New(ctx, outbox.DealCreated, testenv.NewName(), testenv.NewName(), map[string]any{}))
			time.Sleep(200 * time.Millisecond)
		}
	}()
	metricsUntil(t, worker, `agentplane_events_consumed_total{type="deal.created"} `, `agentplane_event_lag_seconds_count `)
	metricsUntil(t, scheduler, "agentplane_outbox_backlog 0")
}
