package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tmaxmax/go-sse"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/devenv/devstack"
)

// spawn starts the service as a separate process with env and args; the test may kill it.
// When the test fails, the end of the process's log is in the test's output; with
// AGENTPLANE_TEST_LOGS naming a directory, every process's whole log is kept there.
func spawn(t *testing.T, env map[string]string, args string) *exec.Cmd {
	t.Helper()
	cmd, _ := spawnLogged(t, env, args)
	return cmd
}

// spawnServing is spawn with the process's listener (the API's, or the worker's and the
// scheduler's metrics) on a port the process picks itself, and returns the address it reports
// listening on: no port is picked, closed and handed on, for another process to take between.
func spawnServing(t *testing.T, env map[string]string, role string) (*exec.Cmd, string) {
	t.Helper()
	env = maps.Clone(env)
	name, re := "AGENTPLANE_METRICS_ADDR", opsListening
	if role == "api" {
		name, re = "AGENTPLANE_HTTP_ADDR", listening
	}
	env[name] = "127.0.0.1:0"
	cmd, logs := spawnLogged(t, env, role)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(logs.String()); m != nil {
			return cmd, m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s process never said where it listens:\n%s", role, logs.String())
		}
	}
}

// spawnLogged is spawn, with the process's log.
func spawnLogged(t testing.TB, env map[string]string, args string) (*exec.Cmd, *output) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTPLANE_TEST_ARGS="+args)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &output{}
	cmd.Stdout, cmd.Stderr = io.Discard, logs
	if dir := os.Getenv("AGENTPLANE_TEST_LOGS"); dir != "" {
		f, err := os.CreateTemp(dir, strings.ReplaceAll(args, " ", "-")+"-*.log")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		cmd.Stderr = io.MultiWriter(logs, f)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			log := logs.String()
			t.Logf("the end of the log of %q (pid %d):\n%s", args, cmd.Process.Pid, log[max(0, len(log)-4000):])
		}
	})
	return cmd, logs
}

// A worker killed (SIGKILL) in the middle of an ingestion loses nothing: once its lease on the
// task expires another worker takes the task over and the source ends success.
func TestWorkerKilledDuringIngestion(t *testing.T) {
	t.Parallel() // waits about a minute for asynq's lease on the killed worker's task to expire
	var first atomic.Bool
	reached := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) {
			close(reached)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><head><title>Survivor</title></head><body><p>This page was read after the crash.</p></body></html>")
	}))
	defer site.Close()

	env := serviceEnv(t)
	env["AGENTPLANE_ALLOW_PRIVATE_NETWORKS"] = "true"
	key := createAccount(t, env)
	api := start(t, env, "api")
	c := apitest.Dial(t, "http://"+waitFor(t, api.stderr, listening, api)[1])
	do := func(method, path string, body any) map[string]any {
		t.Helper()
		res := c.Do(apitest.Request{Method: method, Path: path, Key: key, Body: body})
		if res.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, res.Status, res.Body)
		}
		return res.JSON(t)
	}
	project := do("POST", "/v1/projects", map[string]any{"name": "p"})["project"].(map[string]any)["id"].(string)
	bot := do("POST", "/v1/bot/create", map[string]any{"project_id": project, "name": "n", "model": "m"})["bot"].(map[string]any)["id"].(string)

	victim := spawn(t, env, "worker")
	src := do("POST", "/v1/bot/source/create", map[string]any{"project_id": project, "bot_id": bot, "title": "t", "type": "url", "source": site.URL})["source"].(map[string]any)
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never fetched the page")
	}
	if err := victim.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()

	start(t, env, "worker")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got := do("GET", "/v1/bot/source/read?project_id="+project+"&bot_id="+bot+"&source_id="+src["id"].(string), nil)["source"].(map[string]any)
		if got["status"] == "success" {
			return
		}
		if got["status"] == "failed" || time.Now().After(deadline) {
			t.Fatalf("source after the crash: %v", got)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// agentService is a running API with a project and an agent that uses tools without asking,
// answering through fake; workers are the test's to start.
type agentService struct {
	t       *testing.T
	env     map[string]string
	base    string
	key     string
	c       *apitest.Client
	project string
	bot     string
}

func newAgentService(t *testing.T, fake *providertest.Server, env map[string]string) *agentService {
	t.Helper()
	s := newAgentServiceOnly(t, fake, env)
	api := start(t, env, "api")
	s.dial(waitFor(t, api.stderr, listening, api)[1])
	s.setup()
	return s
}

// newAgentServiceOnly is an agent service whose API processes the test starts itself.
func newAgentServiceOnly(t *testing.T, fake *providertest.Server, env map[string]string) *agentService {
	t.Helper()
	env["AGENTPLANE_PROVIDER_URL"] = fake.URL
	return &agentService{t: t, env: env, key: createAccount(t, env)}
}

// dial sends the requests that follow to the API at addr.
func (s *agentService) dial(addr string) {
	s.base = "http://" + addr
	s.c = apitest.Dial(s.t, s.base)
}

// setup creates the project and its agent.
func (s *agentService) setup() {
	s.project = s.do("POST", "/v1/projects", map[string]any{"name": "p"})["project"].(map[string]any)["id"].(string)
	s.bot = s.do("POST", "/v1/bot/create", map[string]any{"project_id": s.project, "name": "n", "model": "m"})["bot"].(map[string]any)["id"].(string)
	s.do("PUT", "/v1/bot/update", map[string]any{"project_id": s.project, "bot_id": s.bot, "auto_approve_tools": 1})
}

func (s *agentService) do(method, path string, body any) map[string]any {
	s.t.Helper()
	res := s.c.Do(apitest.Request{Method: method, Path: path, Key: s.key, Body: body})
	if res.Status != http.StatusOK {
		s.t.Fatalf("%s %s: %d %s", method, path, res.Status, res.Body)
	}
	return res.JSON(s.t)
}

// streamWithin bounds a stream of the crash tests: the longest wait for a run they make is the
// minute asynq's lease on a killed worker's task takes to expire, plus the run's own lease.
const streamWithin = 3 * time.Minute

// stream sends a request whose answer is an event stream and returns the kept events it
// reads ("id:type") and the execution id the stored event names. At the first event of type
// until (when not empty) it stops, or, with at, calls at and reads on until the stream breaks.
func (s *agentService) stream(method, path string, body any, last, until string, at func()) ([]string, string) {
	s.t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), streamWithin)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var seen []string
	exec := ""
	called := false
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil && called {
			break
		}
		if err != nil && ctx.Err() != nil {
			s.t.Fatalf("the stream did not end within %v; events so far: %v", streamWithin, seen)
		}
		if err != nil {
			s.t.Fatal(err)
		}
		if ev.Type == "delta" {
			continue
		}
		if ev.Type == "stored" {
			var v struct{ ExecutionID string }
			_ = json.Unmarshal([]byte(ev.Data), &v)
			exec = v.ExecutionID
		}
		seen = append(seen, ev.LastEventID+":"+ev.Type)
		if ev.Type == until && at == nil {
			break
		}
		if ev.Type == until {
			at()
			called = true
		}
	}
	return seen, exec
}

// run starts an agent run that creates a deal and reads the stream up to its first cycle.
func (s *agentService) run() ([]string, string) {
	return s.stream("POST", "/v1/bot/chat", map[string]any{"project_id": s.project, "bot_id": s.bot,
		"message": "Add the Crashproof deal", "reasoning_mode": "agent", "stream": true}, "", "cycle", nil)
}

// finish follows the run to its end from the last event seen and checks the client saw every
// kept event once and the deal exists once.
func (s *agentService) finish(seen []string, exec string) {
	s.t.Helper()
	last, _, _ := strings.Cut(seen[len(seen)-1], ":")
	rest, _ := s.stream("GET", "/v1/bot/chat/stream?project_id="+s.project+"&bot_id="+s.bot+"&execution_id="+exec, nil, last, "", nil)
	seen = append(seen, rest...)
	if want := []string{"1:stored", "2:cycle", "3:cycle", "4:done"}; !slices.Equal(seen, want) {
		s.t.Fatalf("events %v, want %v", seen, want)
	}
	deals := s.do("GET", "/v1/bot/crm/deals?project_id="+s.project+"&bot_id="+s.bot, nil)["deals"].([]any)
	if len(deals) != 1 || deals[0].(map[string]any)["title"] != "Crashproof" {
		s.t.Fatalf("deals after the crash: %v", deals)
	}
}

// crashScript creates a deal, lists the deals, then answers; each model call takes delay.
func crashScript(t *testing.T, delay time.Duration) *providertest.Server {
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{FirstByteDelay: delay, Script: []providertest.Turn{
		{Call: &providertest.Call{Name: "create_deal", Arguments: `{"title":"Crashproof"}`}},
		{Call: &providertest.Call{Name: "list_deals", Arguments: `{}`}},
		{Reply: "The Crashproof deal is in the pipeline."},
	}})
	return fake
}

// A worker killed (SIGKILL) in the middle of an agent run loses nothing: another worker takes
// the run over once its lease expires, the deal an earlier cycle created is not created again,
// and a client that reconnects with Last-Event-ID sees every cycle once.
func TestWorkerKilledDuringAgentRun(t *testing.T) {
	t.Parallel() // waits about a minute for asynq's lease on the killed worker's task to expire
	env := serviceEnv(t)
	env["AGENTPLANE_RUN_LEASE"] = "6s"
	s := newAgentService(t, crashScript(t, 2*time.Second), env)
	victim := spawn(t, env, "worker")
	seen, exec := s.run() // cycle 1 (the deal) is kept; the worker now waits for the model
	if err := victim.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	start(t, env, "worker")
	s.finish(seen, exec)
}

// A worker killed (SIGKILL) in the middle of a workflow run it started itself (the run of an
// event, held under its lease rather than queued) loses nothing: the run's task, held back until
// the lease ends, has the next worker deliver the webhook again, with the same delivery id, and
// end the run.
func TestWorkerKilledDuringWorkflowRun(t *testing.T) {
	t.Parallel()
	env := serviceEnv(t)
	env["AGENTPLANE_RUN_LEASE"] = "3s"
	env["AGENTPLANE_ALLOW_PRIVATE_NETWORKS"] = "true"
	var calls atomic.Int32
	arrived, ended := make(chan string, 4), make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // a request read to its end ends its context when its client goes
		arrived <- r.Header.Get("X-Agentplane-Delivery")
		if calls.Add(1) == 1 {
			select { // the first delivery hangs until its worker dies
			case <-r.Context().Done():
			case <-ended:
			}
		}
	}))
	t.Cleanup(hook.Close)
	t.Cleanup(func() { close(ended) })
	if err := run(context.Background(), []string{"migrate"}, func(k string) string { return env[k] }, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	s := newAgentService(t, providertest.New(t), env)
	victim := spawn(t, env, "worker")
	waitForConsumer(t, "workflows-"+env["AGENTPLANE_QUEUE"])
	wf := s.do("POST", "/v1/bot/workflow/create", map[string]any{"project_id": s.project, "bot_id": s.bot, "name": "hook",
		"trigger_type": "event", "trigger_event": "deal.created",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL}}}})["workflow"].(map[string]any)["uuid"].(string)
	s.do("POST", "/v1/bot/crm/deals", map[string]any{"project_id": s.project, "bot_id": s.bot, "title": "Crashproof"})
	delivery := func() string {
		select {
		case id := <-arrived:
			return id
		case <-time.After(time.Minute):
			t.Fatal("the webhook was not delivered")
			return ""
		}
	}
	first := delivery()
	if err := victim.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	start(t, env, "worker")
	if again := delivery(); again != first {
		t.Fatalf("delivered again as %q, first as %q", again, first)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		runs := s.do("GET", "/v1/bot/workflow/runs?project_id="+s.project+"&bot_id="+s.bot+"&workflow_id="+wf, nil)["runs"].([]any)
		if len(runs) != 1 {
			t.Fatalf("%d runs", len(runs))
		}
		if status := runs[0].(map[string]any)["status"]; status == "succeeded" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the run is still %v", status)
		}
	}
}

// A worker stopped (SIGTERM) in the middle of an agent run gives the run back: the next worker
// takes it over at once, without waiting for a lease to expire.
func TestWorkerStoppedDuringAgentRun(t *testing.T) {
	t.Parallel()
	env := serviceEnv(t)
	env["AGENTPLANE_SHUTDOWN_TIMEOUT"] = "300ms"
	env["AGENTPLANE_RUN_LEASE"] = "10m"
	s := newAgentService(t, crashScript(t, 2*time.Second), env)
	victim := spawn(t, env, "worker")
	seen, exec := s.run()
	if err := victim.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := victim.Wait(); err != nil {
		t.Fatalf("the worker did not stop cleanly: %v", err)
	}
	start(t, env, "worker")
	s.finish(seen, exec)
}

// An API replica killed (SIGKILL) while a client streams a run loses the client nothing: the
// client reconnects to another replica with Last-Event-ID and gets the rest from the store.
func TestAPIKilledWhileStreaming(t *testing.T) {
	t.Parallel()
	env := serviceEnv(t)
	s := newAgentServiceOnly(t, crashScript(t, time.Second), env)
	other := start(t, env, "api")
	otherAddr := waitFor(t, other.stderr, listening, other)[1]
	victim, victimAddr := spawnServing(t, env, "api")
	waitHealthy(t, victimAddr)
	s.dial(victimAddr)
	s.setup()
	start(t, env, "worker")
	seen, exec := s.stream("POST", "/v1/bot/chat", map[string]any{"project_id": s.project, "bot_id": s.bot,
		"message": "Add the Crashproof deal", "reasoning_mode": "agent", "stream": true}, "", "cycle", func() {
		if err := victim.Process.Signal(os.Kill); err != nil {
			t.Fatal(err)
		}
	})
	s.dial(otherAddr)
	s.finish(seen, exec)
}

// waitHealthy waits until the process at addr answers /healthz.
func waitHealthy(t *testing.T, addr string) {
	t.Helper()
	waitStatus(t, "http://"+addr+"/healthz", http.StatusOK, time.Minute)
}

// waitStatus waits (up to within) until a GET of url answers status.
func waitStatus(t *testing.T, url string, status int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		res, err := http.Get(url)
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == status {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered %d: %v", url, status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Redis stopped and started again in the middle of a run (with its append-only file, as in
// production) costs the run nothing: it completes, once.
func TestRedisRestartedDuringAgentRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	rs, err := devstack.StartRedisServer(ctx, dir, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	env := serviceEnv(t)
	env["AGENTPLANE_REDIS_URL"] = rs.URL
	s := newAgentService(t, crashScript(t, 2*time.Second), env)
	start(t, env, "worker")
	seen, exec := s.run()
	rs.Close()
	time.Sleep(time.Second)
	_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(rs.URL, "redis://"), "/0"))
	p, _ := strconv.Atoi(port)
	if rs, err = devstack.StartRedisServer(ctx, dir, p, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	s.finish(seen, exec)
}
