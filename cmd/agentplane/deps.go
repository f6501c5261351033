package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/metrics"
	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/queue"
	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/config"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tasks"
	"github.com/agentplane/agentplane/shared/tenancy"
	"github.com/agentplane/agentplane/shared/workflows"
)

// deps are the connections of one process.
type deps struct {
	cfg     config.Config
	log     *slog.Logger
	db      *mongo.Database
	redis   *redis.Client
	redisOp asynq.RedisConnOpt
	nats    *nats.Conn
	tasks   *asynq.Client
	// inspector tells which tasks are under way.
	inspector *asynq.Inspector
	fetch     *safehttp.Client
	metrics   *metrics.Metrics
	// closers close what the roles opened on the way (the dashboard's Redis clients).
	closers []func() error

	mu     sync.Mutex
	dom    *domain            // made once: the roles of a process share its services (and memory's cache)
	events *outbox.Dispatcher // made once: one writer of events per process
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})).With("role", cfg.Role)
}

// redisLogger sends go-redis's internal messages (reconnects, pool trouble) to the JSON log.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.WarnContext(ctx, fmt.Sprintf(format, v...))
}

// connect opens every dependency of cfg. Connections are lazy: a dependency that is down makes
// requests fail with 503 and /readyz report it, it does not stop the process.
func connect(cfg config.Config, log *slog.Logger) (*deps, error) {
	db, err := store.Open(cfg.MongoURI, cfg.MongoDatabase)
	if err != nil {
		return nil, err
	}
	ropt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("AGENTPLANE_REDIS_URL: %w", err)
	}
	aopt, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("AGENTPLANE_REDIS_URL: %w", err)
	}
	nc, err := events.Connect(cfg.NATSURL, "agentplane-"+cfg.Role, log)
	if err != nil {
		return nil, err
	}
	fetch := safehttp.New(safehttp.Options{AllowPrivate: cfg.AllowPrivate, Timeout: cfg.FetchTimeout, MaxBytes: cfg.FetchMaxBytes})
	return &deps{cfg: cfg, log: log, db: db, redis: redis.NewClient(ropt), redisOp: aopt, nats: nc,
		tasks: asynq.NewClient(aopt), inspector: asynq.NewInspector(aopt), fetch: fetch, metrics: metrics.New()}, nil
}

func (d *deps) close(ctx context.Context) {
	for _, c := range d.closers {
		_ = c()
	}
	_ = d.tasks.Close()
	_ = d.inspector.Close()
	d.nats.Close()
	_ = d.redis.Close()
	_ = d.db.Client().Disconnect(ctx)
}

func (d *deps) tenancy() *tenancy.Service { return tenancy.NewService(store.NewTenancy(d.db)) }

// dispatcher publishes domain events as changes commit, and relays the ones left behind; the
// roles of a process share it.
func (d *deps) dispatcher() (*outbox.Dispatcher, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dispatcherLocked()
}

func (d *deps) dispatcherLocked() (*outbox.Dispatcher, error) {
	if d.events != nil {
		return d.events, nil
	}
	pub, err := events.NewPublisher(d.nats)
	if err != nil {
		return nil, err
	}
	d.events = outbox.NewDispatcher(pub, store.NewOutbox(d.db), d.log.With("component", "outbox"), d.metrics.OutboxSetAside)
	return d.events, nil
}

// domain are the services both the API and the workers act through.
type domain struct {
	agents       *agents.Service
	crm          *crm.Service
	calendar     *calendar.Service
	memory       *memory.Memory
	chats        *chats.Service
	sources      *sources.Service
	workflows    *workflows.Service
	workflowRuns *workflows.Runs
	tools        *agentruns.Toolbox
}

func (d *deps) domain() (domain, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dom != nil {
		return *d.dom, nil
	}
	ev, err := d.dispatcherLocked()
	if err != nil {
		return domain{}, err
	}
	mem := memory.New(store.NewMemory(d.db), d.embedder(), d.cfg.MemoryCacheBytes, d.log)
	dm := domain{
		agents:    agents.NewService(store.NewAgents(d.db), ev),
		crm:       crm.NewService(store.NewCRM(d.db), ev, d.cfg.DefaultCurrency),
		calendar:  calendar.NewService(store.NewCalendars(d.db), ev),
		memory:    mem,
		chats:     chats.NewService(store.NewChats(d.db), ev, mem, d.providers(), d.log),
		sources:   sources.NewService(store.NewSources(d.db), ev, d.queue(), int(d.cfg.MaxBodyBytes), d.log),
		workflows: workflows.NewService(store.NewWorkflows(d.db), ev),
	}
	dm.workflowRuns = workflows.NewRuns(dm.workflows, store.NewWorkflowRuns(d.db), d.queue(), d.log.With("component", "workflows"))
	dm.tools = agentruns.NewToolbox(agentruns.Services{Memory: mem, CRM: dm.crm, Calendar: dm.calendar, Workflows: dm.workflowRuns})
	d.dom = &dm
	return dm, nil
}

// apiDeps is everything the HTTP API needs.
func (d *deps) apiDeps() (api.Deps, error) {
	dm, err := d.domain()
	if err != nil {
		return api.Deps{}, err
	}
	return api.Deps{
		Logger:        d.log,
		Tenancy:       d.tenancy(),
		Agents:        dm.agents,
		CRM:           dm.crm,
		Calendar:      dm.calendar,
		Workflows:     dm.workflows,
		WorkflowRuns:  dm.workflowRuns,
		Sources:       dm.sources,
		Memory:        dm.memory,
		Chats:         dm.chats,
		Runs:          d.runs(dm),
		Metrics:       d.metrics,
		RunWait:       d.cfg.RunWait,
		Redis:         d.redis,
		Checks:        d.checks(),
		AdminToken:    d.cfg.AdminToken,
		MaxBodyBytes:  d.cfg.MaxBodyBytes,
		BodyTimeout:   d.cfg.BodyTimeout,
		RateLimit:     d.cfg.RateLimit,
		AccountBudget: d.cfg.AccountBudget,
		Queues:        d.dashboard(),
	}, nil
}

// dashboard is asynqmon, the queue dashboard, read-only and showing task payloads redacted;
// none without an admin token to guard it.
func (d *deps) dashboard() http.Handler {
	if d.cfg.AdminToken == "" {
		return nil
	}
	redacted := asynqmon.PayloadFormatterFunc(func(_ string, payload []byte) string { return tasks.Redacted(payload) })
	h := asynqmon.New(asynqmon.Options{RootPath: api.QueuesPath, RedisConnOpt: d.redisOp, ReadOnly: true,
		PayloadFormatter: redacted, ResultFormatter: asynqmon.ResultFormatterFunc(func(_ string, result []byte) string { return tasks.Redacted(result) })})
	d.closers = append(d.closers, h.Close)
	return h
}

// runs is the API's and the scheduler's part of agent agentruns.
func (d *deps) runs(dm domain) *agentruns.Service {
	return agentruns.NewService(store.NewExecutions(d.db), dm.chats, dm.tools, d.queue(), events.NewRunRelay(d.nats), d.log.With("component", "runs"), time.Second)
}

// executor does the workers' part of workflow agentruns. Webhooks go through the SSRF guard and
// follow no redirect.
func (d *deps) executor() (*workflows.Executor, error) {
	dm, err := d.domain()
	if err != nil {
		return nil, err
	}
	ev, err := d.dispatcher()
	if err != nil {
		return nil, err
	}
	hooks := safehttp.New(safehttp.Options{AllowPrivate: d.cfg.AllowPrivate, Timeout: time.Minute, MaxBytes: 1 << 20, MaxRedirects: -1})
	return workflows.NewExecutor(store.NewWorkflowRuns(d.db), ev, workflows.Actors{Bots: dm.agents, CRM: dm.crm, Sources: dm.sources,
		Chats: dm.chats, Webhooks: hooks}, d.log.With("component", "workflows")), nil
}

// triggers starts workflow runs for domain events until ctx ends: one durable JetStream
// consumer per deployment (named after its queue), shared by the worker replicas. An event is
// acknowledged once its runs are queued.
//
// While NATS cannot create the consumer (it is down) it tries again every few seconds.
func (d *deps) triggers(ctx context.Context, runs *workflows.Runs) error {
	log := d.log.With("component", "triggers")
	for {
		c, err := events.Consume(ctx, d.nats, events.ConsumeConfig{Durable: "workflows-" + d.cfg.Queue, New: true, RetryDelay: time.Second},
			func(ctx context.Context, ev outbox.Event) error {
				d.metrics.Event(ev.Type, ev.OccurredAt)
				return runs.OnEvent(ctx, ev)
			}, log)
		if err == nil {
			<-ctx.Done()
			c.Stop()
			return nil
		}
		log.Warn("workflow triggers not consuming yet", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(3 * time.Second):
		}
	}
}

// runner does the workers' part of agent agentruns.
func (d *deps) runner() (*agentruns.Runner, error) {
	dm, err := d.domain()
	if err != nil {
		return nil, err
	}
	return agentruns.NewRunner(store.NewExecutions(d.db), dm.chats, dm.agents, dm.tools, events.NewRunRelay(d.nats),
		d.log.With("component", "runs"), d.cfg.RunLease, d.metrics.RunCycle), nil
}

func (d *deps) queue() *queue.Queue { return queue.New(d.tasks, d.inspector, d.cfg.Queue) }

// embedder is the configured embeddings endpoint, or nil for lexical retrieval only. The
// operator configures it, so it is called directly, not through the guarded client.
func (d *deps) embedder() memory.Embedder {
	if d.cfg.EmbeddingURL == "" {
		return nil
	}
	return memory.NewEmbedder(d.cfg.EmbeddingURL, d.cfg.EmbeddingKey, d.cfg.EmbeddingModel, &http.Client{Timeout: 30 * time.Second})
}

// providers are the model providers chats use: the configured one (or the offline model), and
// for hosts requests name, clients through the SSRF guard. Streams may run long: the guard's
// own time limit is the provider timeout's business here.
func (d *deps) providers() chats.Providers {
	guarded := safehttp.New(safehttp.Options{AllowPrivate: d.cfg.AllowPrivate, Timeout: 30 * time.Minute, MaxBytes: 64 << 20}).HTTPClient()
	guarded.Transport = d.metrics.Provider(guarded.Transport)
	p := chats.Providers{Default: provider.NewOffline(), BaseURL: d.cfg.ProviderURL, Guarded: guarded, Timeout: d.cfg.ProviderTimeout}
	if d.cfg.ProviderURL != "" {
		p.Default = provider.NewOpenAI(provider.Config{BaseURL: d.cfg.ProviderURL, APIKey: d.cfg.ProviderKey, Timeout: d.cfg.ProviderTimeout,
			HTTPClient: &http.Client{Transport: d.metrics.Provider(nil)}})
	}
	return p
}

// ingester does the workers' part of memory sources.
func (d *deps) ingester() (*sources.Ingester, error) {
	ev, err := d.dispatcher()
	if err != nil {
		return nil, err
	}
	return sources.NewIngester(store.NewSources(d.db), ev, d.fetch, d.embedder(), d.cfg.CrawlMaxPages, d.log.With("component", "ingest"), d.metrics.Ingested), nil
}

// planner is the scheduler's part of memory sources.
func (d *deps) planner() *sources.Planner {
	return sources.NewPlanner(store.NewSources(d.db), d.queue(), d.cfg.SourceStuckAfter, d.log.With("component", "planner"))
}

func (d *deps) checks() []api.Check {
	return []api.Check{
		{Name: "mongodb", Ping: func(ctx context.Context) error { return store.Ping(ctx, d.db) }},
		{Name: "redis", Ping: func(ctx context.Context) error { return d.redis.Ping(ctx).Err() }},
		{Name: "nats", Ping: func(ctx context.Context) error { return events.Ping(ctx, d.nats) }},
	}
}

// migrate creates indexes and the event stream.
func (d *deps) migrate(ctx context.Context) error {
	if err := store.Migrate(ctx, d.db); err != nil {
		return err
	}
	return events.EnsureStream(ctx, d.nats)
}
