package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/config"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/provider"
	"github.com/agentplane/agentplane/shared/safehttp"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/store"
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
	fetch   *safehttp.Client
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
		tasks: asynq.NewClient(aopt), fetch: fetch}, nil
}

func (d *deps) close(ctx context.Context) {
	_ = d.tasks.Close()
	d.nats.Close()
	_ = d.redis.Close()
	_ = d.db.Client().Disconnect(ctx)
}

func (d *deps) tenancy() *tenancy.Service { return tenancy.NewService(store.NewTenancy(d.db)) }

// dispatcher publishes domain events as changes commit, and relays the ones left behind.
func (d *deps) dispatcher() (*outbox.Dispatcher, error) {
	pub, err := events.NewPublisher(d.nats)
	if err != nil {
		return nil, err
	}
	return outbox.NewDispatcher(pub, store.NewOutbox(d.db), d.log.With("component", "outbox")), nil
}

// apiDeps is everything the HTTP API needs.
func (d *deps) apiDeps() (api.Deps, error) {
	ev, err := d.dispatcher()
	if err != nil {
		return api.Deps{}, err
	}
	mem := memory.New(store.NewMemory(d.db), d.embedder(), d.cfg.MemoryCacheBytes, d.log)
	return api.Deps{
		Logger:       d.log,
		Tenancy:      d.tenancy(),
		Agents:       agents.NewService(store.NewAgents(d.db), ev),
		CRM:          crm.NewService(store.NewCRM(d.db), ev, d.cfg.DefaultCurrency),
		Calendar:     calendar.NewService(store.NewCalendars(d.db), ev),
		Workflows:    workflows.NewService(store.NewWorkflows(d.db), ev),
		Sources:      sources.NewService(store.NewSources(d.db), ev, d.queue(), int(d.cfg.MaxBodyBytes), d.log),
		Memory:       mem,
		Chats:        chats.NewService(store.NewChats(d.db), ev, mem, d.providers(), d.log),
		Redis:        d.redis,
		Checks:       d.checks(),
		AdminToken:   d.cfg.AdminToken,
		MaxBodyBytes: d.cfg.MaxBodyBytes,
		RateLimit:    d.cfg.RateLimit,
	}, nil
}

func (d *deps) queue() *tasks.Queue { return tasks.NewQueue(d.tasks, tasks.DefaultQueue) }

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
	guarded := safehttp.New(safehttp.Options{AllowPrivate: d.cfg.AllowPrivate, Timeout: 30 * time.Minute, MaxBytes: 64 << 20})
	p := chats.Providers{Default: provider.NewOffline(), BaseURL: d.cfg.ProviderURL, Guarded: guarded.HTTPClient(), Timeout: d.cfg.ProviderTimeout}
	if d.cfg.ProviderURL != "" {
		p.Default = provider.NewOpenAI(provider.Config{BaseURL: d.cfg.ProviderURL, APIKey: d.cfg.ProviderKey, Timeout: d.cfg.ProviderTimeout})
	}
	return p
}

// ingester does the workers' part of memory sources.
func (d *deps) ingester() (*sources.Ingester, error) {
	ev, err := d.dispatcher()
	if err != nil {
		return nil, err
	}
	return sources.NewIngester(store.NewSources(d.db), ev, d.fetch, d.embedder(), d.cfg.CrawlMaxPages, d.log.With("component", "ingest")), nil
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
