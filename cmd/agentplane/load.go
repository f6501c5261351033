package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// loadConfig is what `agentplane load` is told.
type loadConfig struct {
	base       string
	key        string
	abusiveKey string
	clients    int
	abusive    int
	pace       float64
	duration   time.Duration
	hookAddr   string
	model      string
}

// loadOps are the operations of the mixed workload and their weights: mostly standard chats,
// then what keeps memory, the CRM and the workflow engine busy.
var loadOps = []struct {
	name   string
	weight int
}{
	{"chat", 45}, {"history", 15}, {"deal_update", 15}, {"search", 10}, {"source_create", 8}, {"agent_run", 7},
}

// load holds a mixed workload against a running service for a while and prints what it saw: per
// operation, requests, errors and latency percentiles; the API process's memory idle and under
// load, and whether it kept growing; then whether the asynchronous work the load caused
// (ingestion, workflow webhooks) caught up.
func load(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c loadConfig
	fs.StringVar(&c.base, "base", "http://127.0.0.1:8080", "the service's base URL (without /v1)")
	fs.StringVar(&c.key, "key", "", "an API key of the account to load (required)")
	fs.IntVar(&c.clients, "clients", 8, "concurrent clients, each sending its next request when the last is answered")
	fs.IntVar(&c.abusive, "abusive", 0, "abusive clients beside them (oversized fields, dotted keys, bodies that never arrive, concurrent updates of one deal), reported apart")
	fs.Float64Var(&c.pace, "abusive-rate", 1, "abusive operations per second per abusive client (an operation of 8 concurrent updates counts once); 0 sends the next as soon as the last is answered")
	fs.StringVar(&c.abusiveKey, "abusive-key", "", "an API key of the abusive clients' own account (default: --key, the same account)")
	fs.DurationVar(&c.duration, "duration", time.Minute, "how long to hold the load")
	fs.StringVar(&c.model, "model", "gpt-4o-mini", "the load agent's model (the service's provider serves it; without one the offline model answers)")
	fs.StringVar(&c.hookAddr, "hook-addr", "127.0.0.1:0", "where the webhook receiver of the load's workflow listens; the service must reach it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.key == "" || c.clients < 1 || c.abusive < 0 || c.pace < 0 || c.duration <= 0 {
		fs.Usage()
		return errors.New("load: --key, a positive --clients and --duration are required")
	}
	l, err := newLoader(c)
	if err != nil {
		return err
	}
	defer l.close()
	if err := l.setup(ctx, stdout); err != nil {
		return err
	}
	if c.abusive > 0 {
		l.abusive = &tenant{key: cmp.Or(c.abusiveKey, c.key)}
		if err := l.setupTenant(ctx, l.abusive, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "holding %d clients (and %d abusive) for %s against %s\n", c.clients, c.abusive, c.duration, c.base)
	mem := &memWatch{url: c.base + "/metrics", http: l.http}
	idle, idleOK := mem.sample(ctx)
	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		mem.watch(runCtx, max(c.duration/20, 250*time.Millisecond))
	}()
	elapsed := l.hold(runCtx)
	<-sampled
	// The last sample, once the load stopped: a loaded machine may have answered few others.
	if s, ok := mem.sample(ctx); ok {
		mem.add(s, elapsed)
	}
	l.report(stdout, elapsed)
	mem.report(stdout, idle, idleOK)
	return l.settle(ctx, stdout, time.Minute)
}

// newLoader returns a loader of c with its webhook receiver listening.
func newLoader(c loadConfig) (*loader, error) {
	l := &loader{tenant: &tenant{key: c.key}, cfg: c, http: &http.Client{Timeout: 2 * time.Minute}, stats: map[string]*opStats{}}
	for _, op := range loadOps {
		l.stats[op.name] = &opStats{}
	}
	for _, op := range abuseOps {
		l.stats[op.name] = &opStats{}
	}
	hook, err := l.receiver()
	if err != nil {
		return nil, err
	}
	l.hook = hook
	return l, nil
}

// hold runs the clients until ctx ends and returns how long they ran.
func (l *loader) hold(ctx context.Context) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for range l.cfg.clients {
		wg.Go(func() { l.client(ctx) })
	}
	for range l.cfg.abusive {
		wg.Go(func() { l.abuser(ctx) })
	}
	wg.Wait()
	return time.Since(start)
}

// close stops the webhook receiver, with its connections, and closes the loader's idle ones.
func (l *loader) close() {
	_ = l.hook.Close()
	l.http.CloseIdleConnections()
}

type loader struct {
	*tenant // the normal clients'
	abusive *tenant
	cfg     loadConfig
	http    *http.Client
	hook    *http.Server
	stats   map[string]*opStats

	sources    sync.Map     // source id -> struct{}: created under load
	values     atomic.Int64 // deal values, each new, so every update changes its deal
	updates    sync.Map     // value -> deal id: deal updates the service accepted
	chats      sync.Map     // chat id -> *atomic.Int64: messages the service accepted into it
	delivered  sync.Map     // value -> struct{}: deal values a webhook delivery carried
	deliveries atomic.Int64
}

type opStats struct {
	mu        sync.Mutex
	latencies []time.Duration
	errors    map[string]int // by status ("429", "503", "transport", ...)
}

func (s *opStats) add(took time.Duration, failure string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, took)
	if failure != "" {
		if s.errors == nil {
			s.errors = map[string]int{}
		}
		s.errors[failure]++
	}
}

// tenant is an account the load runs in: its key, and the project, agent and deals setup made.
type tenant struct {
	key     string
	project string
	bot     string
	deals   []string
}

// call sends one request as the normal clients' tenant.
func (l *loader) call(ctx context.Context, method, path string, body, out any) (string, error) {
	return l.callAs(ctx, l.tenant, method, path, body, out)
}

// callAs sends one request as t and decodes a 2xx answer into out; a failure names its status.
func (l *loader) callAs(ctx context.Context, t *tenant, method, path string, body, out any) (string, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return "", err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.cfg.base+path, rd)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+t.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := l.http.Do(req)
	if err != nil {
		return "transport", err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return "transport", err
	}
	if res.StatusCode/100 != 2 {
		return strconv.Itoa(res.StatusCode), fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return "decode", fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return "", nil
}

func (t *tenant) scope(extra map[string]any) map[string]any {
	out := map[string]any{"project_id": t.project, "bot_id": t.bot}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func (t *tenant) query(extra url.Values) string {
	q := url.Values{"project_id": {t.project}, "bot_id": {t.bot}}
	for k, v := range extra {
		q[k] = v
	}
	return q.Encode()
}

// receiver counts the webhook deliveries of the load's workflow.
func (l *loader) receiver() (*http.Server, error) {
	ln, err := net.Listen("tcp", l.cfg.hookAddr)
	if err != nil {
		return nil, fmt.Errorf("load: webhook receiver: %w", err)
	}
	l.cfg.hookAddr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Data struct{ Value float64 }
		}
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l.delivered.Store(int64(ev.Data.Value), struct{}{})
		l.deliveries.Add(1)
	})}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// setup makes the normal clients' project, agent, memory, deals and a workflow that posts every
// deal update to the receiver.
func (l *loader) setup(ctx context.Context, stdout io.Writer) error {
	return l.setupTenant(ctx, l.tenant, stdout)
}

// setupTenant makes t's project, agent, memory, deals and a workflow that posts every deal update
// to the receiver.
func (l *loader) setupTenant(ctx context.Context, t *tenant, stdout io.Writer) error {
	var p struct{ Project struct{ ID string } }
	if _, err := l.callAs(ctx, t, "POST", "/v1/projects", map[string]any{"name": "load " + time.Now().UTC().Format(time.RFC3339)}, &p); err != nil {
		return fmt.Errorf("load: create project: %w", err)
	}
	t.project = p.Project.ID
	var b struct{ Bot struct{ UUID string } }
	if _, err := l.callAs(ctx, t, "POST", "/v1/bot/create", map[string]any{"project_id": t.project, "name": "Load", "model": l.cfg.model,
		"instruction": "Answer from the shop's notes."}, &b); err != nil {
		return fmt.Errorf("load: create agent: %w", err)
	}
	t.bot = b.Bot.UUID
	for i := range 5 {
		if _, err := l.callAs(ctx, t, "POST", "/v1/bot/source/create", t.scope(map[string]any{"type": "text", "title": "Notes " + strconv.Itoa(i),
			"source": loadText(i)}), nil); err != nil {
			return fmt.Errorf("load: create source: %w", err)
		}
	}
	for i := range 20 {
		var d struct{ Deal struct{ UUID string } }
		if _, err := l.callAs(ctx, t, "POST", "/v1/bot/crm/deals", t.scope(map[string]any{"title": "Deal " + strconv.Itoa(i), "value": 100 * (i + 1)}), &d); err != nil {
			return fmt.Errorf("load: create deal: %w", err)
		}
		t.deals = append(t.deals, d.Deal.UUID)
	}
	if _, err := l.callAs(ctx, t, "POST", "/v1/bot/workflow/create", t.scope(map[string]any{"name": "Deal updates out", "trigger_type": "event",
		"trigger_event": "deal.updated", "actions": []any{map[string]any{"type": "webhook", "params": map[string]any{"url": "http://" + l.cfg.hookAddr + "/deal"}}}}), nil); err != nil {
		return fmt.Errorf("load: create the webhook workflow (the service must reach %s: AGENTPLANE_ALLOW_PRIVATE_NETWORKS=true for loopback): %w", l.cfg.hookAddr, err)
	}
	fmt.Fprintf(stdout, "project %s, agent %s, %d deals, webhooks to %s\n", t.project, t.bot, len(t.deals), l.cfg.hookAddr)
	return nil
}

var loadQuestions = []string{"When does the shop open?", "Do you ship abroad?", "What is the return policy?", "hello", "Which payment methods work?"}

func loadText(i int) string {
	return fmt.Sprintf("Note %d. The shop opens at nine and closes at six on weekdays. Orders ship abroad within five days. "+
		"Returns are free within thirty days. Cards and bank transfers are accepted. Reference %d.", i, rand.IntN(1e6))
}

// client sends operations until ctx ends, in a chat of its own.
func (l *loader) client(ctx context.Context) {
	total := 0
	for _, op := range loadOps {
		total += op.weight
	}
	var chatID string
	for ctx.Err() == nil {
		pick, name := rand.IntN(total), ""
		for _, op := range loadOps {
			if pick < op.weight {
				name = op.name
				break
			}
			pick -= op.weight
		}
		if name == "history" && chatID == "" {
			name = "chat"
		}
		start := time.Now()
		failure, err := l.do(ctx, name, &chatID)
		if ctx.Err() != nil && err != nil {
			return // cut off by the end of the run, not a failure of the service
		}
		l.stats[name].add(time.Since(start), failure)
	}
}

func (l *loader) do(ctx context.Context, op string, chatID *string) (string, error) {
	switch op {
	case "chat", "agent_run":
		body := map[string]any{"message": loadQuestions[rand.IntN(len(loadQuestions))]}
		if *chatID != "" {
			body["chat_id"] = *chatID
		}
		if op == "agent_run" {
			body["reasoning_mode"] = "agent"
		}
		var out struct {
			Chat struct {
				ChatID string `json:"chat_id"`
			}
		}
		failure, err := l.call(ctx, "POST", "/v1/bot/chat", l.scope(body), &out)
		if err == nil {
			*chatID = out.Chat.ChatID
			n, _ := l.chats.LoadOrStore(out.Chat.ChatID, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}
		return failure, err
	case "history":
		return l.call(ctx, "GET", "/v1/bot/chat/read?"+l.query(url.Values{"chat_id": {*chatID}, "per_page": {"20"}}), nil, nil)
	case "deal_update":
		id, value := l.deals[rand.IntN(len(l.deals))], 1000+l.values.Add(1)
		failure, err := l.call(ctx, "PUT", "/v1/bot/crm/deals/"+id, l.scope(map[string]any{"value": value}), nil)
		if err == nil {
			l.updates.Store(value, id)
		}
		return failure, err
	case "search":
		return l.call(ctx, "POST", "/v1/bot/search", l.scope(map[string]any{"keywords": "ship abroad returns", "top": 3}), nil)
	case "source_create":
		var out struct{ Source struct{ ID string } }
		failure, err := l.call(ctx, "POST", "/v1/bot/source/create", l.scope(map[string]any{"type": "text", "title": "Load note",
			"source": loadText(rand.IntN(100))}), &out)
		if err == nil {
			l.sources.Store(out.Source.ID, struct{}{})
		}
		return failure, err
	}
	return "", fmt.Errorf("load: unknown operation %q", op)
}

// report prints a Markdown table of what each operation saw.
func (l *loader) report(w io.Writer, elapsed time.Duration) {
	fmt.Fprintf(w, "\n| operation | requests | req/s | errors | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|---|\n")
	var all []time.Duration
	allErrors := map[string]int{}
	for _, op := range loadOps {
		all = append(all, l.row(w, op.name, elapsed, allErrors, "")...)
	}
	fmt.Fprintf(w, "| all | %d | %.1f | %d | %s |\n", len(all), float64(len(all))/elapsed.Seconds(), sumErrors(allErrors), percentiles(all))
	if len(allErrors) > 0 {
		fmt.Fprintf(w, "\nerrors by status: %v\n", allErrors)
	}
	if len(all) > 0 {
		fmt.Fprintf(w, "error rate: %.3f%%\n", 100*float64(sumErrors(allErrors))/float64(len(all)))
	}
	if l.cfg.abusive > 0 {
		l.reportAbuse(w, elapsed)
	}
}

// reportAbuse prints what the abusive clients saw: an error is an answer other than the one
// their operation must get.
func (l *loader) reportAbuse(w io.Writer, elapsed time.Duration) {
	fmt.Fprintf(w, "\n| abusive operation | requests | req/s | unexpected answers | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|---|---|\n")
	unexpected := map[string]int{}
	for _, op := range abuseOps {
		l.row(w, op.name, elapsed, unexpected, op.name+" ")
	}
	fmt.Fprintf(w, "unexpected abusive answers: %d %v\n", sumErrors(unexpected), unexpected)
}

// row prints the table row of operation op, adds its errors to into (keyed by prefix and
// status) and returns its latencies.
func (l *loader) row(w io.Writer, op string, elapsed time.Duration, into map[string]int, prefix string) []time.Duration {
	s := l.stats[op]
	s.mu.Lock()
	lat := slices.Clone(s.latencies)
	errs := 0
	for k, n := range s.errors {
		errs += n
		into[prefix+k] += n
	}
	s.mu.Unlock()
	fmt.Fprintf(w, "| %s | %d | %.1f | %d | %s |\n", op, len(lat), float64(len(lat))/elapsed.Seconds(), errs, percentiles(lat))
	return lat
}

func sumErrors(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func percentiles(lat []time.Duration) string {
	if len(lat) == 0 {
		return "- | - | - | -"
	}
	slices.Sort(lat)
	at := func(q float64) string {
		return fmt.Sprintf("%.1f ms", float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds())/1000)
	}
	return at(0.50) + " | " + at(0.95) + " | " + at(0.99) + " | " + at(1)
}

// settle waits (up to within) for the work the load queued: every source created under load
// ingested, and every deal update the service accepted delivered by the workflow's webhook; it
// fails when that does not happen.
func (l *loader) settle(ctx context.Context, w io.Writer, within time.Duration) error {
	start := time.Now()
	deadline := start.Add(within)
	for {
		var pending []string
		failed := 0
		l.sources.Range(func(id, _ any) bool {
			var out struct{ Source struct{ Status string } }
			if _, err := l.call(ctx, "GET", "/v1/bot/source/read?"+l.query(url.Values{"source_id": {id.(string)}}), nil, &out); err != nil {
				pending = append(pending, id.(string))
				return true
			}
			switch out.Source.Status {
			case "success":
				l.sources.Delete(id)
			case "failed":
				failed++
				l.sources.Delete(id)
			default:
				pending = append(pending, id.(string))
			}
			return true
		})
		updates, undelivered := 0, 0
		l.updates.Range(func(value, _ any) bool {
			updates++
			if _, ok := l.delivered.Load(value); !ok {
				undelivered++
			}
			return true
		})
		if failed > 0 {
			return fmt.Errorf("load: %d sources failed to ingest", failed)
		}
		if len(pending) == 0 && undelivered == 0 {
			fmt.Fprintf(w, "settled in %s: every source ingested; %d webhooks delivered the %d deal updates\n", time.Since(start).Round(time.Millisecond), l.deliveries.Load(), updates)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("load: not settled after %s: %d sources still ingesting %v, %d of %d deal updates not delivered by a webhook",
				within, len(pending), pending[:min(len(pending), 5)], undelivered, updates)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
