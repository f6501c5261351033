//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
)

var (
	chatDuration = flag.Duration("chat.duration", 20*time.Second, "how long BenchmarkChatConcurrency holds each load")
	chatStored   = flag.Int("chat.stored", 0, "how many chats BenchmarkChatConcurrency stores before its loads (of another agent)")
	chatProfile  = flag.String("chat.profile", "", "a file BenchmarkChatConcurrency writes dev's CPU profile of the load at 16 connections to (and what it allocated meanwhile to the file's name with .allocs)")
)

// BenchmarkChatConcurrency measures standard chats (a new chat per request, an agent with one
// small text source, an OpenAI-compatible fake provider on loopback) driven by wrk from outside,
// at 1 and at 16 connections, then one-cycle agent runs (the same chat with "reasoning_mode":
// "agent", not streamed: the API waits for the worker's run, whose one model call answers) at 16, against `agentplane dev` in a process of its own on the store of
// cmd/teststore, another process: chats a second, p50 and p99, the CPU a chat costs in each
// process (from /proc/<pid>/stat), and the store commands a chat makes (the API's own count).
// Dev's CPU a chat is also given beyond what it uses idle (measured over 10 s before the loads),
// and as a multiple of the CPU a request costs a bare Go HTTP server in the same run (bareCPU).
// Run it under teststore (the store's CPU is counted apart from the service's) with wrk on PATH:
//
//	go build -o bin/teststore ./cmd/teststore
//	bin/teststore go test -run '^$' -bench BenchmarkChatConcurrency -benchtime 1x ./cmd/agentplane
func BenchmarkChatConcurrency(b *testing.B) {
	storePID, err := strconv.Atoi(os.Getenv("AGENTPLANE_TEST_STORE_PID"))
	if err != nil {
		b.Skip("run under bin/teststore: the store's CPU is measured in its own process")
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed")
	}
	fake := providertest.New(b)
	db := testenv.Mongo(b)
	storeChats(b, db, *chatStored)
	const key, admin = "ap_benchchatconcurrency0123456789abcdefghijklm", "bench-admin-token"
	env := map[string]string{
		"AGENTPLANE_MONGO_URI": testenv.MongoURI(), "AGENTPLANE_MONGO_DATABASE": db.Name(),
		"AGENTPLANE_REDIS_URL": testenv.RedisURL(), "AGENTPLANE_NATS_URL": testenv.NATSURL(),
		"AGENTPLANE_HTTP_ADDR": "127.0.0.1:0", "AGENTPLANE_DATA_DIR": b.TempDir(),
		"AGENTPLANE_QUEUE":       testenv.NewName(),
		"AGENTPLANE_DEV_API_KEY": key, "AGENTPLANE_ADMIN_TOKEN": admin, "AGENTPLANE_RATE_LIMIT": "0", "AGENTPLANE_ALLOW_PRIVATE_NETWORKS": "true",
		"AGENTPLANE_PROVIDER_URL": fake.URL, "AGENTPLANE_PROVIDER_KEY": "sk-bench",
	}
	cmd, logs := spawnLogged(b, env, "dev")
	var base string
	for deadline := time.Now().Add(time.Minute); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		} else if time.Now().After(deadline) {
			b.Fatalf("dev never said where it listens:\n%s", logs.String())
		}
	}
	// The relay's scan at start reads every document that can carry events (chats and their pages
	// included): with chats stored, it is work of its own, measured apart from the loads.
	var scanned time.Duration
	for deadline := time.Now().Add(10 * time.Minute); scanned == 0; time.Sleep(50 * time.Millisecond) {
		if m := scanTook.FindStringSubmatch(logs.String()); m != nil {
			if scanned, err = time.ParseDuration(m[1]); err != nil {
				b.Fatal(err)
			}
			scanned = max(scanned, time.Nanosecond)
		} else if time.Now().After(deadline) {
			b.Fatalf("the relay's scan at start never completed:\n%s", logs.String())
		}
	}
	b.ReportMetric(scanned.Seconds(), "start-scan-s")
	project, agent := chatAgent(b, base, key)
	script := func(name string, body map[string]any) string {
		b.Helper()
		file := filepath.Join(b.TempDir(), name+".lua")
		raw, _ := json.Marshal(body)
		lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Authorization\"] = \"Bearer %s\"\n", raw, key)
		if err := os.WriteFile(file, []byte(lua), 0o600); err != nil {
			b.Fatal(err)
		}
		return file
	}
	chat := script("chat", map[string]any{"project_id": project, "bot_id": agent, "message": "What are your opening hours?"})
	run := script("run", map[string]any{"project_id": project, "bot_id": agent, "message": "What are your opening hours?", "reasoning_mode": "agent"})
	load := func(script string, conns int, d time.Duration, profile string) chatLoad {
		b.Helper()
		apiCPU, storeCPU, commands := processCPU(b, cmd.Process.Pid), processCPU(b, storePID), storeCommands(b, base)
		profiled := make(chan error, 2)
		if profile != "" {
			go func() { profiled <- fetchProfile(base, admin, "profile", d, profile) }()
			go func() { profiled <- fetchProfile(base, admin, "allocs", d, profile+".allocs") }()
		} else {
			profiled <- nil
			profiled <- nil
		}
		out, err := exec.Command(wrk, "-t", strconv.Itoa(min(conns, 2)), "-c", strconv.Itoa(conns), "-d", d.String(), "--timeout", "10s", "--latency", "-s", script, base+"/v1/bot/chat").CombinedOutput()
		if err != nil {
			b.Fatalf("wrk: %v\n%s", err, out)
		}
		b.Logf("%d connections:\n%s", conns, out)
		l := parseWrk(b, string(out))
		l.apiCPU, l.storeCPU = processCPU(b, cmd.Process.Pid)-apiCPU, processCPU(b, storePID)-storeCPU
		after := storeCommands(b, base)
		l.commands = (after[0] - commands[0]) / (after[1] - commands[1])
		l.allCommands = (after[2] - commands[2]) / (after[1] - commands[1])
		for range 2 {
			if err := <-profiled; err != nil {
				b.Fatal(err)
			}
		}
		return l
	}
	load(chat, 4, 5*time.Second, "") // warm-up: connections, caches, the first plans
	// The CPU dev uses with nothing to do (the worker's look for tasks at its poll, the relay's
	// and the schedulers' ticks), after the warm-up's statistics and events have settled: a cost
	// of each second, not of each chat, shown apart as the CPU a chat costs beyond it.
	time.Sleep(2 * time.Second)
	idleFrom, idleFor := processCPU(b, cmd.Process.Pid), 10*time.Second
	time.Sleep(idleFor)
	idle := float64(processCPU(b, cmd.Process.Pid)-idleFrom) / float64(idleFor)
	b.ReportMetric(idle, "agentplane-idle-cores")
	one, sixteen := load(chat, 1, *chatDuration, ""), load(chat, 16, *chatDuration, *chatProfile)
	bare := bareCPU(b, wrk, chat, 5*time.Second)
	b.ReportMetric(bare*1000, "bare-http-cpu-us/req-c16")
	b.ReportMetric(sixteen.apiCPU.Seconds()*1000/float64(sixteen.requests)/bare, "agentplane-cpu/bare-http-c16")
	load(run, 4, 5*time.Second, "")
	runs := load(run, 16, *chatDuration, "")
	for _, l := range []struct {
		name string
		chatLoad
	}{{"chat-c1", one}, {"chat-c16", sixteen}, {"run-c16", runs}} {
		b.ReportMetric(l.rate, l.name+"/s")
		b.ReportMetric(l.p50, "p50-ms-"+l.name)
		b.ReportMetric(l.p99, "p99-ms-"+l.name)
		b.ReportMetric(l.apiCPU.Seconds()*1000/float64(l.requests), "agentplane-cpu-ms/"+l.name)
		b.ReportMetric((l.apiCPU.Seconds()-idle*chatDuration.Seconds())*1000/float64(l.requests), "agentplane-beyond-idle-cpu-ms/"+l.name)
		b.ReportMetric(l.storeCPU.Seconds()*1000/float64(l.requests), "store-cpu-ms/"+l.name)
		b.ReportMetric(l.commands, "store-cmds/"+l.name)
		b.ReportMetric(l.allCommands, "store-cmds-all/"+l.name)
		if l.errors > 0 {
			b.Errorf("%s: %d of %d requests failed", l.name, l.errors, l.requests)
		}
	}
	b.ReportMetric(sixteen.rate/one.rate, "rate-16/1")
	cpu := func(l chatLoad) float64 { return (l.apiCPU + l.storeCPU).Seconds() / float64(l.requests) }
	b.ReportMetric(cpu(sixteen)/cpu(one), "cpu/chat-16/1")
}

// bareCPU is the CPU in milliseconds a request of script costs a bare Go HTTP server (net/http
// and encoding/json alone, in this process: it decodes the request's JSON and answers a small
// JSON object) at 16 connections over d. It is the floor of any Go JSON API on the machine,
// measured in the same run, so that dev's CPU a chat reads as a multiple of it whatever the
// machine's speed.
func bareCPU(b *testing.B, wrk, script string, d time.Duration) float64 {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok", "message": body["message"]})
	}))
	defer srv.Close()
	from := processCPU(b, os.Getpid())
	out, err := exec.Command(wrk, "-t", "2", "-c", "16", "-d", d.String(), "--latency", "-s", script, srv.URL).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	cpu := processCPU(b, os.Getpid()) - from
	l := parseWrk(b, string(out))
	if l.errors > 0 || l.requests == 0 {
		b.Fatalf("the bare server: %d of %d requests failed", l.errors, l.requests)
	}
	return cpu.Seconds() * 1000 / float64(l.requests)
}

// scanTook finds the time of the relay's scan at start in dev's log.
var scanTook = regexp.MustCompile(`"msg":"outbox relay: scan complete"[^\n]*"took":"([^"]+)"`)

// chatLoad is what one wrk run measured.
type chatLoad struct {
	requests, errors int
	rate, p50, p99   float64 // chats a second, milliseconds
	apiCPU, storeCPU time.Duration
	commands         float64 // store commands a request
	allCommands      float64 // every store command dev made during the load, a request
}

// chatAgent makes a project and an agent with one small text source, ready, with the key.
func chatAgent(b *testing.B, base, key string) (project, agent string) {
	b.Helper()
	call := func(method, path string, body any, out any) {
		b.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("%s %s: %d", method, path, res.StatusCode)
		}
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			b.Fatal(err)
		}
	}
	var p struct{ Project struct{ ID string } }
	call("POST", "/v1/projects", map[string]any{"name": "bench"}, &p)
	var a struct{ Bot struct{ UUID string } }
	call("POST", "/v1/bot/create", map[string]any{"project_id": p.Project.ID, "name": "Bench", "model": "gpt-4o-mini"}, &a)
	var s struct{ Source struct{ ID string } }
	call("POST", "/v1/bot/source/create", map[string]any{"project_id": p.Project.ID, "bot_id": a.Bot.UUID, "type": "text", "title": "Hours",
		"source": "We are open from nine to five, Monday to Friday. Orders ship within two days; returns are free for 30 days."}, &s)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var read struct{ Source struct{ Status string } }
		call("GET", "/v1/bot/source/read?project_id="+p.Project.ID+"&bot_id="+a.Bot.UUID+"&source_id="+s.Source.ID, nil, &read)
		if read.Source.Status == "success" {
			return p.Project.ID, a.Bot.UUID
		}
		if time.Now().After(deadline) {
			b.Fatalf("the source is %q after a minute", read.Source.Status)
		}
	}
}

// fetchProfile writes the profile kind ("profile" for the CPU's, "allocs") of the process at
// base over d (its /debug/pprof/<kind>, behind the admin token) to file.
func fetchProfile(base, admin, kind string, d time.Duration, file string) error {
	req, _ := http.NewRequest(http.MethodGet, base+"/debug/pprof/"+kind+"?seconds="+strconv.Itoa(max(int(d.Seconds())-1, 1)), nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var profile bytes.Buffer
	if _, err := profile.ReadFrom(res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %d %s", res.StatusCode, profile.String())
	}
	return os.WriteFile(file, profile.Bytes(), 0o600)
}

// processCPU is the CPU process pid has used, user and system (its /proc stat, in clock ticks of
// 10 ms).
func processCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's name (in parentheses, which may hold spaces): utime and
	// stime are the 14th and 15th of the line.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.Atoi(fields[11])
	stime, _ := strconv.Atoi(fields[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

var (
	storeCommandsLine = regexp.MustCompile(`(?m)^agentplane_http_store_commands_(sum|count)\{[^}]*route="/v1/bot/chat"[^}]*\} (\S+)$`)
	runCommandsLine   = regexp.MustCompile(`(?m)^agentplane_task_store_commands_sum\{type="agent:run"\} (\S+)$`)
	allCommandsLine   = regexp.MustCompile(`(?m)^agentplane_store_commands_total\{[^}]*\} (\S+)$`)
)

// storeCommands are the store commands counted for chats (the API's, and the worker's for the
// agent runs among them), the chats, and every store command dev made (its background work's
// too: the relay's, the statistics recorder's, the schedulers').
func storeCommands(b *testing.B, base string) [3]float64 {
	b.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var text bytes.Buffer
	_, _ = text.ReadFrom(res.Body)
	var out [3]float64
	for _, m := range allCommandsLine.FindAllStringSubmatch(text.String(), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		out[2] += v
	}
	for _, m := range storeCommandsLine.FindAllStringSubmatch(text.String(), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		if m[1] == "sum" {
			out[0] += v
		} else {
			out[1] += v
		}
	}
	for _, m := range runCommandsLine.FindAllStringSubmatch(text.String(), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		out[0] += v
	}
	return out
}

var (
	wrkRequests = regexp.MustCompile(`(\d+) requests in`)
	wrkRate     = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkPercent  = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$`)
)

// parseWrk reads wrk's report (with --latency).
func parseWrk(b *testing.B, out string) chatLoad {
	b.Helper()
	var l chatLoad
	m := wrkRequests.FindStringSubmatch(out)
	r := wrkRate.FindStringSubmatch(out)
	if m == nil || r == nil {
		b.Fatalf("wrk's report: %s", out)
	}
	l.requests, _ = strconv.Atoi(m[1])
	l.rate, _ = strconv.ParseFloat(r[1], 64)
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		l.errors += n
	}
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			l.errors += n
		}
	}
	for _, m := range wrkPercent.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		v *= map[string]float64{"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[m[3]]
		if m[1] == "50" {
			l.p50 = v
		} else {
			l.p99 = v
		}
	}
	return l
}
