package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/devenv/devstack"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
)

var heavyFaults = flag.Bool("faults.heavy", false, "the fault suite's heavier variant: more clients, longer outages, every fault twice (make faults)")

// faultStack is the service's dependencies as servers of the test's own, which it stops and
// starts again on the same ports and data: Redis with its append-only file, NATS with JetStream
// on disk, and the embedded store.
type faultStack struct {
	t                   *testing.T
	dir                 string
	redis               *devstack.Redis
	nats                *devstack.NATS
	mongo               *devstack.Mongo
	redisPort, natsPort int
	mongoAddr           string
}

// faultStacks lets one fault stack live at a time in the tests' process: FerretDB's New writes a
// package variable its running instances read (ferretdb.go: version.Get().Package), so two
// embedded stores started in one process race (seen under -race when the parallel tests ran four
// per core).
var faultStacks sync.Mutex

func newFaultStack(t *testing.T) *faultStack {
	t.Helper()
	faultStacks.Lock()
	t.Cleanup(faultStacks.Unlock) // registered first, so it runs after the stack's own cleanups
	s := &faultStack{t: t, dir: t.TempDir()}
	ctx := context.Background()
	var err error
	if s.redis, err = devstack.StartRedisServer(ctx, filepath.Join(s.dir, "redis"), 0, true); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.redis.URL)
	s.redisPort, _ = strconv.Atoi(u.Port())
	if s.nats, err = devstack.StartNATS(filepath.Join(s.dir, "nats"), 0); err != nil {
		t.Fatal(err)
	}
	s.natsPort = s.nats.Port()
	if s.mongo, err = devstack.StartMongo(ctx, filepath.Join(s.dir, "mongo"), "127.0.0.1:0", quietLog()); err != nil {
		t.Fatal(err)
	}
	m, _ := url.Parse(s.mongo.URI)
	s.mongoAddr = m.Host
	t.Cleanup(func() {
		s.redis.Close()
		s.nats.Close()
		_ = s.mongo.Close(context.Background())
	})
	return s
}

// restartNATS starts NATS again on its port and data, after it was stopped.
func (s *faultStack) restartNATS() {
	var err error
	if s.nats, err = devstack.StartNATS(filepath.Join(s.dir, "nats"), s.natsPort); err != nil {
		s.t.Error(err)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// env is the service's configuration on the stack.
func (s *faultStack) env() map[string]string {
	return map[string]string{
		"AGENTPLANE_MONGO_URI": s.mongo.URI, "AGENTPLANE_MONGO_DATABASE": "faults",
		"AGENTPLANE_REDIS_URL": s.redis.URL, "AGENTPLANE_NATS_URL": s.nats.URL,
		"AGENTPLANE_QUEUE": testenv.NewName(), "AGENTPLANE_ALLOW_PRIVATE_NETWORKS": "true", "AGENTPLANE_RATE_LIMIT": "0",
		"AGENTPLANE_RUN_WAIT": "5s", "AGENTPLANE_RUN_LEASE": "10s", "AGENTPLANE_SHUTDOWN_TIMEOUT": "2s",
	}
}

// fault stops one dependency (or kills a process) and brings it back.
type fault struct {
	name string
	// down is true when the API should find a dependency missing (its /readyz answers 503).
	down        bool
	stop, start func()
}

func (s *faultStack) faults(killWorker func()) []fault {
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			s.t.Error(err)
		}
	}
	return []fault{
		{name: "redis", down: true, stop: s.redis.Close, start: func() {
			var err error
			s.redis, err = devstack.StartRedisServer(ctx, filepath.Join(s.dir, "redis"), s.redisPort, true)
			must(err)
		}},
		{name: "nats", down: true, stop: s.nats.Close, start: s.restartNATS},
		{name: "store", down: true, stop: func() { must(s.mongo.Close(ctx)) }, start: func() {
			var err error
			s.mongo, err = devstack.StartMongo(ctx, filepath.Join(s.dir, "mongo"), s.mongoAddr, quietLog())
			must(err)
		}},
		{name: "worker", stop: killWorker, start: func() {}},
	}
}

// The service under a mixed load (chats, agent runs, source ingestion, deal updates firing a
// webhook workflow) survives its dependencies failing one after another: Redis, NATS and the
// store stopped and started again, and a worker SIGKILLed. While a dependency is down the API
// says so (503 on /readyz and on requests that need it), never 500. Afterwards nothing the API
// accepted is lost: every deal update's event ran the workflow exactly once and reached the
// webhook, every source ended success or failed, every chat holds the messages sent to it, and
// the processes hold no more goroutines than before the load.
func TestFaultsUnderLoad(t *testing.T) {
	t.Parallel()
	clients, outage, rounds := 3, 3*time.Second, 1
	if *heavyFaults {
		clients, outage, rounds = 8, 15*time.Second, 2
	}
	stack := newFaultStack(t)
	env := stack.env()
	getenv := func(k string) string { return env[k] }
	if err := run(context.Background(), []string{"migrate"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := stack.mongo.Reindex(context.Background(), env["AGENTPLANE_MONGO_DATABASE"]); err != nil {
		t.Fatal(err)
	}
	key := createAccount(t, env)

	_, apiAddr := spawnServing(t, env, "api")
	waitHealthy(t, apiAddr)
	base := "http://" + apiAddr
	spawn(t, env, "scheduler")
	victim, _ := spawnServing(t, env, "worker")
	_, survivorAddr := spawnServing(t, env, "worker")
	waitHealthy(t, survivorAddr)

	l, err := newLoader(loadConfig{base: base, key: key, clients: clients, hookAddr: "127.0.0.1:0", model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := l.setup(context.Background(), io.Discard); err != nil {
		t.Fatal(err)
	}
	before := map[string]int{"api": goroutines(t, base), "worker": goroutines(t, "http://"+survivorAddr)}

	killWorker := func() {
		if err := victim.Process.Signal(os.Kill); err != nil {
			t.Error(err)
		}
		_ = victim.Wait()
		victim, _ = spawnServing(t, env, "worker")
	}
	ctx, stopLoad := context.WithCancel(context.Background())
	held := make(chan time.Duration)
	go func() { held <- l.hold(ctx) }()
	var downAt []time.Time
	for range rounds {
		for _, f := range stack.faults(killWorker) {
			time.Sleep(2 * time.Second)
			t.Logf("%s: stopping", f.name)
			downAt = append(downAt, time.Now())
			f.stop()
			if f.down {
				waitStatus(t, base+"/readyz", http.StatusServiceUnavailable, 30*time.Second)
			}
			time.Sleep(outage)
			f.start()
			waitStatus(t, base+"/readyz", http.StatusOK, 30*time.Second)
			t.Logf("%s: back", f.name)
		}
	}
	time.Sleep(2 * time.Second)
	stopLoad()
	elapsed := <-held
	var report strings.Builder
	l.report(&report, elapsed)
	t.Logf("load during the faults:\n%s", report.String())

	for op, s := range l.stats {
		for status, n := range s.errors {
			if status != "503" {
				t.Errorf("%s: %d answers %s (only 503, while a dependency is down, is allowed: concurrent updates never answer 409)", op, n, status)
			}
		}
	}
	if err := l.settle(context.Background(), &report, time.Duration(rounds)*4*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, report.String())
	}
	checkRunsOncePerEvent(t, l, 3*time.Minute)
	checkChatsKept(t, l)
	l.close()
	for role, addr := range map[string]string{"api": base, "worker": "http://" + survivorAddr} {
		waitGoroutines(t, role, addr, before[role])
	}
}

// checkRunsOncePerEvent waits (up to within) for the load's workflow runs to end, then checks
// that each succeeded and that the workflow ran once for each event it was triggered by. A run
// whose worker was killed ends once asynq hands its task to another worker, after its lease.
func checkRunsOncePerEvent(t *testing.T, l *loader, within time.Duration) {
	t.Helper()
	type run struct {
		UUID    string
		Status  string
		Error   string
		Trigger struct {
			EventID string `json:"event_id"`
		}
	}
	var runs []run
	deadline := time.Now().Add(within)
	for {
		runs = nil
		for page := 1; ; page++ {
			var out struct {
				Total int
				Runs  []run
			}
			if _, err := l.call(context.Background(), "GET", "/v1/bot/workflow/runs?"+l.query(url.Values{"page": {strconv.Itoa(page)}, "per_page": {"100"}}), nil, &out); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, out.Runs...)
			if page*100 >= out.Total {
				break
			}
		}
		ongoing := slices.ContainsFunc(runs, func(r run) bool { return r.Status == "queued" || r.Status == "running" })
		if !ongoing || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	perEvent := map[string]int{}
	for _, r := range runs {
		perEvent[r.Trigger.EventID]++
		if r.Status != "succeeded" {
			t.Errorf("run %s: %s %s", r.UUID, r.Status, r.Error)
		}
	}
	updates := 0
	l.updates.Range(func(_, _ any) bool { updates++; return true })
	if len(perEvent) < updates {
		t.Errorf("%d events ran the workflow for %d accepted deal updates", len(perEvent), updates)
	}
	for ev, n := range perEvent {
		if n != 1 {
			t.Errorf("event %s ran the workflow %d times", ev, n)
		}
	}
	t.Logf("%d deal updates accepted; %d events each ran the workflow once; %d webhook deliveries", updates, len(perEvent), l.deliveries.Load())
}

// checkChatsKept checks that every chat holds at least the user messages the API accepted
// into it.
func checkChatsKept(t *testing.T, l *loader) {
	t.Helper()
	l.chats.Range(func(id, accepted any) bool {
		users := 0
		for page := 1; ; page++ {
			var out struct {
				Total        int
				Conversation []struct{ Role string }
			}
			if _, err := l.call(context.Background(), "GET", "/v1/bot/chat/read?"+l.query(url.Values{"chat_id": {id.(string)},
				"page": {strconv.Itoa(page)}, "per_page": {"100"}}), nil, &out); err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Conversation {
				if m.Role == "user" {
					users++
				}
			}
			if page*100 >= out.Total {
				break
			}
		}
		if want := int(accepted.(*atomic.Int64).Load()); users < want {
			t.Errorf("chat %s holds %d user messages; the API accepted %d", id, users, want)
		}
		return true
	})
}

// goroutines reads go_goroutines from the metrics at base.
func goroutines(t *testing.T, base string) int {
	t.Helper()
	_, body := get(t, base+"/metrics")
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatalf("no go_goroutines in %s/metrics", base)
	return 0
}

// goroutineSlack is how many more goroutines than before the load a process may keep: pooled
// connections the dependencies' clients opened again after a restart.
const goroutineSlack = 10

// waitGoroutines waits (up to 30 s) until the process at base holds no more goroutines than
// before the load, give or take goroutineSlack.
func waitGoroutines(t *testing.T, role, base string, before int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := goroutines(t, base)
		if n <= before+goroutineSlack {
			t.Logf("%s: %d goroutines before the load, %d after", role, before, n)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %d goroutines before the load, %d after the faults: a leak", role, before, n)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
