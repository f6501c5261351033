package api_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/api/apitest"
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
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tenancy"
	"github.com/agentplane/agentplane/shared/workflows"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bundle is what an API test needs: a real server on real stores, and a tenant to call it as.
type bundle struct {
	client  *apitest.Client
	tenancy *tenancy.Service
	db      *mongo.Database
	outbox  *outbox.Dispatcher
	memory  *memory.Memory
	chats   *chats.Service
	agents  *agents.Service
	tools   *agentruns.Toolbox
	relay   agentruns.Relay
	runs    *agentruns.Service
	deals   *crm.Service
	flows   *workflows.Runs
	metrics *metrics.Metrics
	nats    *nats.Conn
	srcs    *sources.Service
	// queue is the test's own task queue on Redis; workers started by startWorker serve it.
	queue    string
	redisURL string
	log      *slog.Logger
	// key and project belong to one fresh account.
	key     string
	project tenancy.Project
}

const adminToken = "test-admin-token"

// options are what a test may change of the server setup gives it.
type options struct {
	rateLimit   int
	budget      int
	bodyTimeout time.Duration
	adminToken  string
	redis       *redis.Client
	nats        *nats.Conn
	checks      []api.Check
	embed       memory.Embedder
	provider    string
	heartbeat   time.Duration
	runWait     time.Duration
	logs        io.Writer
}

type option func(*options)

func withRateLimit(n int) option             { return func(o *options) { o.rateLimit = n } }
func withAccountBudget(n int) option         { return func(o *options) { o.budget = n } }
func withBodyTimeout(d time.Duration) option { return func(o *options) { o.bodyTimeout = d } }
func withAdminToken(t string) option         { return func(o *options) { o.adminToken = t } }
func withRedis(r *redis.Client) option       { return func(o *options) { o.redis = r } }
func withChecks(c ...api.Check) option       { return func(o *options) { o.checks = c } }

// withProvider makes the OpenAI-compatible server at baseURL the configured provider.
func withProvider(baseURL string) option { return func(o *options) { o.provider = baseURL } }

// withHeartbeat spaces event-stream heartbeats by d.
func withHeartbeat(d time.Duration) option { return func(o *options) { o.heartbeat = d } }

// withRunWait bounds how long a non-streamed agent run is waited for.
func withRunWait(d time.Duration) option { return func(o *options) { o.runWait = d } }

// withEmbedder ranks memory with embed's vectors too.
func withEmbedder(e memory.Embedder) option { return func(o *options) { o.embed = e } }

// withLogs writes the log of the server, its services and its workers to w.
func withLogs(w io.Writer) option { return func(o *options) { o.logs = w } }

// withNATS publishes events through nc instead of the shared test server.
func withNATS(nc *nats.Conn) option { return func(o *options) { o.nats = nc } }

func setup(t testing.TB, opts ...option) *bundle {
	t.Helper()
	db := testenv.Mongo(t)
	o := options{rateLimit: 1000, adminToken: adminToken, redis: testenv.Redis(t), nats: testenv.NATS(t)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.checks == nil {
		o.checks = []api.Check{
			{Name: "mongodb", Ping: func(ctx context.Context) error { return store.Ping(ctx, db) }},
			{Name: "redis", Ping: func(ctx context.Context) error { return o.redis.Ping(ctx).Err() }},
		}
	}
	ten := tenancy.NewService(store.NewTenancy(db))
	logs := io.Discard
	if o.logs != nil {
		logs = o.logs
	}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	ev := dispatcher(t, db, o.nats, log)
	queueName := testenv.NewName()
	mem := memory.New(store.NewMemory(db), o.embed, 64<<20, log)
	providers := chats.Providers{Default: provider.NewOffline(), BaseURL: o.provider, Timeout: 2 * time.Second,
		Guarded: safehttp.New(safehttp.Options{AllowPrivate: true, Timeout: time.Minute}).HTTPClient()}
	if o.provider != "" {
		providers.Default = provider.NewOpenAI(provider.Config{BaseURL: o.provider, Timeout: 2 * time.Second})
	}
	bots := agents.NewService(store.NewAgents(db), ev)
	deals := crm.NewService(store.NewCRM(db), ev, "USD")
	cal := calendar.NewService(store.NewCalendars(db), ev)
	cs := chats.NewService(store.NewChats(db), ev, mem, providers, log)
	q := queue.New(asynqClient(t), asynqInspector(t), queueName)
	flows := workflows.NewService(store.NewWorkflows(db), ev)
	flowRuns := workflows.NewRuns(flows, store.NewWorkflowRuns(db), q, log)
	srcs := sources.NewService(store.NewSources(db), ev, q, 1<<20, log)
	tools := agentruns.NewToolbox(agentruns.Services{Memory: mem, CRM: deals, Calendar: cal, Workflows: flowRuns})
	relay := events.NewRunRelay(o.nats)
	met := metrics.New()
	rs := agentruns.NewService(store.NewExecutions(db), cs, tools, q, relay, log, 200*time.Millisecond)
	deps := api.Deps{
		Logger:        log,
		Tenancy:       ten,
		Agents:        bots,
		CRM:           deals,
		Calendar:      cal,
		Workflows:     flows,
		WorkflowRuns:  flowRuns,
		Sources:       srcs,
		Memory:        mem,
		Chats:         cs,
		Runs:          rs,
		RunWait:       o.runWait,
		Metrics:       met,
		Heartbeat:     o.heartbeat,
		Redis:         o.redis,
		Checks:        o.checks,
		AdminToken:    o.adminToken,
		MaxBodyBytes:  1 << 20,
		BodyTimeout:   o.bodyTimeout,
		RateLimit:     o.rateLimit,
		AccountBudget: o.budget,
		BudgetWait:    time.Second,
	}
	b := &bundle{client: apitest.New(t, api.NewServer(deps)), tenancy: ten, db: db, outbox: ev, memory: mem,
		chats: cs, agents: bots, tools: tools, relay: relay, runs: rs, deals: deals, srcs: srcs, flows: flowRuns, metrics: met, nats: o.nats, queue: queueName, redisURL: testenv.RedisURL(), log: log}
	b.key, b.project = b.newTenant(t)
	return b
}

// waitABit paces a loop that polls for something to happen.
func waitABit() { time.Sleep(50 * time.Millisecond) }

// dispatcher publishes events to nc's stream.
func dispatcher(t testing.TB, db *mongo.Database, nc *nats.Conn, log *slog.Logger) *outbox.Dispatcher {
	t.Helper()
	if err := events.EnsureStream(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	pub, err := events.NewPublisher(nc)
	if err != nil {
		t.Fatal(err)
	}
	return outbox.NewDispatcher(pub, store.NewOutbox(db), log, func(string) {})
}

// newTenant creates an account with a key and a project.
func (b *bundle) newTenant(t testing.TB) (string, tenancy.Project) {
	t.Helper()
	ctx := context.Background()
	a, key, err := b.tenancy.CreateAccount(ctx, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.tenancy.CreateProject(ctx, a.ID, "project")
	if err != nil {
		t.Fatal(err)
	}
	return key, p
}

// expect fails the test unless res has status and, for errors, code.
func expect(t testing.TB, res *apitest.Response, status int, code string) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status %d, want %d; body: %s", res.Status, status, res.Body)
	}
	if code != "" {
		if got := res.ErrorCode(t); got != code {
			t.Fatalf("error code %q, want %q; body: %s", got, code, res.Body)
		}
	}
}
