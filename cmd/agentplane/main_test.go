package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
)

// TestMain runs the tests, or, when a test re-executes this binary as a separate process of
// the service (AGENTPLANE_TEST_ARGS set), the program itself: a process a test can SIGKILL. The
// parallel tests run four per core: most of their time is spent waiting, the longest (120 s)
// for a killed worker's task lease to expire (asynq looks for expired leases once a minute).
func TestMain(m *testing.M) {
	if args := os.Getenv("AGENTPLANE_TEST_ARGS"); args != "" {
		os.Args = append(os.Args[:1], strings.Fields(args)...)
		main()
		return
	}
	testenv.ParallelPerCore(4)
	testenv.Main(m)
}

// output is an io.Writer that the test can read while the program writes.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor polls out until re matches, and returns the submatches.
func waitFor(t testing.TB, out *output, re *regexp.Regexp, p *program) []string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
		select {
		case <-p.exited:
			t.Fatalf("program ended early: %v\n%s", p.err, out.String())
		case <-deadline:
			t.Fatalf("no %s in output:\n%s", re, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

type program struct {
	cancel context.CancelFunc
	exited chan struct{}
	err    error
	// waited says the exit was awaited (and its error reported).
	waited bool
	stdout *output
	stderr *output
}

func start(t testing.TB, env map[string]string, args ...string) *program {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &program{cancel: cancel, exited: make(chan struct{}), stdout: &output{}, stderr: &output{}}
	go func() {
		p.err = run(ctx, args, func(k string) string { return env[k] }, p.stdout, p.stderr)
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends the equivalent of SIGTERM and waits for a clean exit.
func (p *program) stop(t testing.TB) {
	t.Helper()
	p.shutdown()
	p.wait(t)
}

// shutdown sends the equivalent of SIGTERM.
func (p *program) shutdown() {
	if p.cancel != nil {
		p.cancel()
		p.cancel = nil
	}
}

// wait waits for the program's clean exit, once shutdown began.
func (p *program) wait(t testing.TB) {
	t.Helper()
	if p.waited {
		return
	}
	p.waited = true
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("exit: %v\n%s", p.err, p.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no exit 60s after shutdown began")
	}
}

// waitInFlight waits until the server at metricsURL works on at least n requests.
func waitInFlight(t *testing.T, metricsURL string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := http.Get(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		for line := range strings.Lines(string(text)) {
			if v, ok := strings.CutPrefix(line, "agentplane_http_requests_in_flight "); ok {
				if got, _ := strconv.Atoi(strings.TrimSpace(v)); got >= n {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never worked on %d requests at once", n)
		}
	}
}

// createAccount creates an account with the CLI on the service of env and returns its API key.
func createAccount(t *testing.T, env map[string]string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"accounts", "create", "--name", "acme"}, func(k string) string { return env[k] }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	m := bannerKey.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no key printed: %s", out.String())
	}
	return m[1]
}

var (
	bannerKey     = regexp.MustCompile(`API key\s+(ap_\S+)`)
	bannerBase    = regexp.MustCompile(`base URL\s+(\S+)/v1`)
	bannerProject = regexp.MustCompile(`project id\s+(\S+)`)
	bannerCurl    = regexp.MustCompile(`curl -s (\S+) -H 'Authorization: Bearer (\S+)'`)
)

// A newcomer's first run: dev prints a URL, key and project; the printed curl works; data
// survives a restart.
func TestDevFirstRunAndRestart(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"AGENTPLANE_DATA_DIR": dir, "AGENTPLANE_HTTP_ADDR": "127.0.0.1:0", "AGENTPLANE_DEV_MONGO_ADDR": "127.0.0.1:0"}
	first := start(t, env, "dev")
	key := waitFor(t, first.stdout, bannerKey, first)[1]
	base := waitFor(t, first.stdout, bannerBase, first)[1]
	project := waitFor(t, first.stdout, bannerProject, first)[1]
	curl := waitFor(t, first.stdout, bannerCurl, first)
	if curl[2] != key || !strings.HasPrefix(curl[1], base) {
		t.Fatalf("curl line %q does not use the printed key and base URL", curl[0])
	}

	c := apitest.Dial(t, base)
	res := c.Do(apitest.Request{Method: "GET", Path: strings.TrimPrefix(curl[1], base), Key: key})
	if res.Status != http.StatusOK || !strings.Contains(string(res.Body), project) {
		t.Fatalf("printed curl: %d %s", res.Status, res.Body)
	}
	res = c.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: key, Body: map[string]string{"name": "kept"}})
	if res.Status != http.StatusOK {
		t.Fatalf("create project: %d %s", res.Status, res.Body)
	}
	if res := c.Do(apitest.Request{Method: "GET", Path: "/readyz"}); res.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", res.Status, res.Body)
	}
	if strings.Contains(first.stderr.String(), key) {
		t.Fatal("the API key appears in the logs")
	}
	first.stop(t)

	second := start(t, env, "dev")
	base = waitFor(t, second.stdout, bannerBase, second)[1]
	if got := waitFor(t, second.stdout, bannerProject, second)[1]; got != project {
		t.Fatalf("project after restart %s, want %s", got, project)
	}
	if strings.Contains(second.stdout.String(), key) {
		t.Fatal("the key is printed again after restart: it must be stored only as a hash")
	}
	res = apitest.Dial(t, base).Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: key})
	if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"kept"`) {
		t.Fatalf("after restart: %d %s", res.Status, res.Body)
	}
}

func TestDevFixedKey(t *testing.T) {
	const fixed = "ap_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	env := map[string]string{"AGENTPLANE_DATA_DIR": t.TempDir(), "AGENTPLANE_HTTP_ADDR": "127.0.0.1:0",
		"AGENTPLANE_DEV_MONGO_ADDR": "127.0.0.1:0", "AGENTPLANE_DEV_API_KEY": fixed}
	p := start(t, env, "dev")
	if key := waitFor(t, p.stdout, bannerKey, p)[1]; key != fixed {
		t.Fatalf("printed key %s, want the configured one", key)
	}
	base := waitFor(t, p.stdout, bannerBase, p)[1]
	if res := apitest.Dial(t, base).Do(apitest.Request{Method: "GET", Path: "/v1/projects", Key: fixed}); res.Status != http.StatusOK {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
}

// serviceEnv points a role at the test servers, with a database of its own.
func serviceEnv(t *testing.T) map[string]string {
	db := testenv.Mongo(t)
	return map[string]string{
		"AGENTPLANE_MONGO_URI": testenv.MongoURI(), "AGENTPLANE_MONGO_DATABASE": db.Name(),
		"AGENTPLANE_REDIS_URL": testenv.RedisURL(), "AGENTPLANE_NATS_URL": testenv.NATSURL(),
		"AGENTPLANE_HTTP_ADDR": "127.0.0.1:0", "AGENTPLANE_ADMIN_TOKEN": "admin-secret",
		"AGENTPLANE_QUEUE": testenv.NewName(),
	}
}

var listening = regexp.MustCompile(`"msg":"api listening"[^\n]*"addr":"([^"]+)"`)

// The CLI creates an account whose key the api role accepts; migrate is idempotent.
func TestAccountsCreateAndAPIRole(t *testing.T) {
	env := serviceEnv(t)
	for range 2 {
		if err := run(context.Background(), []string{"migrate"}, func(k string) string { return env[k] }, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"accounts", "create", "--name", "acme"}, func(k string) string { return env[k] }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`API key\s+(ap_\S+)`).FindStringSubmatch(out.String())
	if key == nil {
		t.Fatalf("no key printed: %s", out.String())
	}
	p := start(t, env, "api")
	addr := waitFor(t, p.stderr, listening, p)[1]
	c := apitest.Dial(t, "http://"+addr)
	if res := c.Do(apitest.Request{Method: "GET", Path: "/v1/keys", Key: key[1]}); res.Status != http.StatusOK {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
	if res := c.Do(apitest.Request{Method: "GET", Path: "/readyz"}); res.Status != http.StatusOK {
		t.Fatalf("readyz %d %s", res.Status, res.Body)
	}
	if strings.Contains(p.stderr.String(), key[1]) {
		t.Fatal("the API key appears in the logs")
	}
	for _, line := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
}

// On shutdown the API stops accepting and finishes the requests in flight.
func TestGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	env := serviceEnv(t)
	key := createAccount(t, env)
	p := start(t, env, "api")
	addr := waitFor(t, p.stderr, listening, p)[1]

	body, w := io.Pipe()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/projects", body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	answered := make(chan *http.Response, 1)
	failed := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			failed <- err
			return
		}
		answered <- res
	}()
	if _, err := io.WriteString(w, `{"name": "in`); err != nil {
		t.Fatal(err)
	}
	// The request is in flight once the server counts it (beside the scrape that asks); its
	// handler waits for the rest of the body, which comes only after shutdown has begun.
	waitInFlight(t, "http://"+addr+"/metrics", 2)
	p.shutdown()
	// Shutdown has begun once the listener is closed: new connections are refused.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts 30 s after shutdown began")
		}
	}
	if _, err := io.WriteString(w, `-flight"}`); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	var res *http.Response
	select {
	case res = <-answered:
	case err := <-failed:
		t.Fatalf("the in-flight request failed: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(bufio.NewReader(res.Body))
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), "in-flight") {
		t.Fatalf("in-flight request: %d %s", res.StatusCode, b)
	}
	p.wait(t)
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("still accepting after shutdown")
	}
}

// A second dev (or anything else on the embedded store's default address) does not stop dev
// from starting: with AGENTPLANE_DEV_MONGO_ADDR unset it takes a free port and prints it; an
// address set on purpose is kept, and its being taken is an error.
func TestDevStoreAddressTaken(t *testing.T) {
	const def = "127.0.0.1:27018"
	if ln, err := net.Listen("tcp", def); err == nil {
		t.Cleanup(func() { _ = ln.Close() })
	}
	env := map[string]string{"AGENTPLANE_DATA_DIR": t.TempDir(), "AGENTPLANE_HTTP_ADDR": "127.0.0.1:0"}
	dev := start(t, env, "dev")
	base := waitFor(t, dev.stdout, bannerBase, dev)[1]
	store := waitFor(t, dev.stdout, regexp.MustCompile(`MongoDB\s+mongodb://(\S+?)/`), dev)[1]
	if store == def || !strings.HasPrefix(store, "127.0.0.1:") {
		t.Fatalf("the embedded store is at %s, want a free loopback port", store)
	}
	if res := apitest.Dial(t, base).Do(apitest.Request{Method: "GET", Path: "/readyz"}); res.Status != http.StatusOK {
		t.Fatalf("readyz: %d %s", res.Status, res.Body)
	}

	env = map[string]string{"AGENTPLANE_DATA_DIR": t.TempDir(), "AGENTPLANE_HTTP_ADDR": "127.0.0.1:0", "AGENTPLANE_DEV_MONGO_ADDR": def}
	err := run(context.Background(), []string{"dev"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("dev on a taken address it was given: %v, want address already in use", err)
	}
}

var bannerSMTP = regexp.MustCompile(`SMTP\s+(\S+:\d+) \(mail to agents at @(\S+);`)

// dev listens for mail on the loopback port its banner prints: a message to an agent's address
// is taken over SMTP and kept in the agent's inbox, its answer unsent without a relay.
func TestDevListensForMail(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"AGENTPLANE_DATA_DIR": dir, "AGENTPLANE_HTTP_ADDR": "127.0.0.1:0", "AGENTPLANE_DEV_MONGO_ADDR": "127.0.0.1:0"}
	p := start(t, env, "dev")
	key := waitFor(t, p.stdout, bannerKey, p)[1]
	base := waitFor(t, p.stdout, bannerBase, p)[1]
	project := waitFor(t, p.stdout, bannerProject, p)[1]
	smtpLine := waitFor(t, p.stdout, bannerSMTP, p)
	if smtpLine[2] != "localhost" || !strings.HasPrefix(smtpLine[1], "127.0.0.1:") {
		t.Fatalf("the banner's SMTP line %q", smtpLine[0])
	}
	c := apitest.Dial(t, base)
	res := c.Do(apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: key, Body: map[string]any{"project_id": project, "name": "Mailbox", "model": "gpt-4o-mini"}})
	if res.Status != http.StatusOK {
		t.Fatalf("create agent: %d %s", res.Status, res.Body)
	}
	bot := res.JSON(t)["bot"].(map[string]any)["id"].(string)
	q := "?project_id=" + project + "&bot_id=" + bot
	address := c.Do(apitest.Request{Method: "GET", Path: "/v1/bot/email/address" + q, Key: key}).JSON(t)["email_address"].(string)
	msg := "From: alice@example.com\r\nTo: " + address + "\r\nSubject: Hello\r\nMessage-ID: <dev1@example.com>\r\n\r\nAre you there?\r\n"
	if err := smtp.SendMail(smtpLine[1], nil, "alice@example.com", []string{address}, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list := c.Do(apitest.Request{Method: "GET", Path: "/v1/bot/email/readall" + q, Key: key}).JSON(t)["emails"].([]any)
		var in map[string]any
		for _, e := range list {
			if e := e.(map[string]any); e["direction"] == "inbound" {
				in = e
			}
		}
		if in != nil && in["status"] == "unsent" && in["message_id"] == "dev1@example.com" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mail was not kept and answered: %v", list)
		}
	}
	p.stop(t)
}
