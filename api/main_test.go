package api_test

import (
	"cmp"
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
	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/dnstxt/dnstxttest"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/kit/config"
	"github.com/agentplane/agentplane/shared/kit/secrets"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tenancy"
	"github.com/agentplane/agentplane/shared/workflows"
)

// TestMain runs the package's parallel tests two per core: an API test spends much of its time
// waiting (on a worker's turn, the store's process, an event) with its core idle. Measured side
// by side on one machine, the tests A-E took 476 s this way and 525 s one per core, for the same
// CPU.
func TestMain(m *testing.M) {
	testenv.ParallelPerCore(2)
	testenv.Main(m)
}

// bundle is what an API test needs: a real server on real stores, built by the composition root
// as production builds it, and a tenant to call it as.
type bundle struct {
	client *apitest.Client
	// app is the API's application; workers run in applications of their own (startWorker), as
	// they run in processes of their own.
	app     *app.App
	tenancy *tenancy.Service
	db      *mongo.Database
	outbox  *outbox.Dispatcher
	memory  *memory.Memory
	chats   *chats.Service
	agents  *agents.Service
	tools   *agentruns.Toolbox
	runs    *agentruns.Service
	// evalRuns are the eval runs (their reconciler's Requeue).
	evalRuns *evals.Runs
	deals    *crm.Service
	flows    *workflows.Runs
	nats     *nats.Conn
	// queue is the test's own task queue on Redis; workers started by startWorker serve it.
	queue string
	log   *slog.Logger
	// key and project belong to one fresh account.
	key     string
	project tenancy.Project
	// dns is the DNS server agents' domain verification records are looked up with.
	dns *dnstxttest.Server
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
	embeddings  string
	provider    string
	heartbeat   time.Duration
	runWait     time.Duration
	cacheTTL    time.Duration
	runPoll     time.Duration
	workerPoll  time.Duration
	// providerTimeout bounds a model call (2 s when zero).
	providerTimeout time.Duration
	logs            io.Writer
	// refusePrivate refuses loopback and private addresses to outbound requests, as production does.
	refusePrivate bool
	// publicRate and publicAgentRate are the end users' limits per client address and per agent.
	publicRate, publicAgentRate int
	// relay is the SMTP relay URL of agents' email answers ("": none).
	relay string
}

type option func(*options)

func withRateLimit(n int) option             { return func(o *options) { o.rateLimit = n } }
func withAccountBudget(n int) option         { return func(o *options) { o.budget = n } }
func withBodyTimeout(d time.Duration) option { return func(o *options) { o.bodyTimeout = d } }
func withAdminToken(t string) option         { return func(o *options) { o.adminToken = t } }
func withRedis(r *redis.Client) option       { return func(o *options) { o.redis = r } }
func withChecks(c ...api.Check) option       { return func(o *options) { o.checks = c } }

// withPublicLimits sets the end users' limits: requests a minute per client address and per agent.
func withPublicLimits(address, agent int) option {
	return func(o *options) { o.publicRate, o.publicAgentRate = address, agent }
}

// withProvider makes the OpenAI-compatible server at baseURL the configured provider.
func withProvider(baseURL string) option { return func(o *options) { o.provider = baseURL } }

// withHeartbeat spaces event-stream heartbeats by d.
func withHeartbeat(d time.Duration) option { return func(o *options) { o.heartbeat = d } }

// withRunWait bounds how long a non-streamed agent run is waited for.
func withRunWait(d time.Duration) option { return func(o *options) { o.runWait = d } }

// withRunPoll has followers of agent runs read them every d when no notice comes, instead of
// every 200 ms.
func withRunPoll(d time.Duration) option { return func(o *options) { o.runPoll = d } }

// withWorkerPoll has the workers' looks for tasks wait up to d for a wake instead of 1 s.
func withWorkerPoll(d time.Duration) option { return func(o *options) { o.workerPoll = d } }

// withCacheTTL keeps cached entries for d instead of 30 s.
func withCacheTTL(d time.Duration) option { return func(o *options) { o.cacheTTL = d } }

// withProviderTimeout bounds a model call by d instead of 2 s.
func withProviderTimeout(d time.Duration) option { return func(o *options) { o.providerTimeout = d } }

// withEmbeddings ranks memory with the vectors of the OpenAI-compatible embeddings endpoint at
// baseURL too.
func withEmbeddings(baseURL string) option { return func(o *options) { o.embeddings = baseURL } }

// withPrivateRefused refuses loopback and private addresses to the server's outbound requests,
// as production's SSRF guard does.
func withPrivateRefused() option { return func(o *options) { o.refusePrivate = true } }

// withRelay sends agents' email answers through the SMTP relay at url.
func withRelay(url string) option { return func(o *options) { o.relay = url } }

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
	logs := io.Discard
	if o.logs != nil {
		logs = o.logs
	}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	if err := events.EnsureStream(context.Background(), o.nats); err != nil {
		t.Fatal(err)
	}
	dns := dnstxttest.Start(t)
	cfg := testConfig(o)
	cfg.DNSResolver = dns.Addr
	a := app.New(cfg, log, app.Conns{DB: db, Redis: o.redis, RedisOpt: redisOpt(t), NATS: o.nats})
	a.RunPoll = cmp.Or(o.runPoll, 200*time.Millisecond)
	t.Cleanup(a.Close)
	d, err := a.Domain()
	if err != nil {
		t.Fatal(err)
	}
	deps, err := a.API()
	if err != nil {
		t.Fatal(err)
	}
	if o.checks != nil {
		deps.Checks = o.checks
	}
	deps.Heartbeat, deps.BudgetWait = o.heartbeat, time.Second
	b := &bundle{client: apitest.New(t, api.NewServer(deps)), app: a, tenancy: d.Tenancy, db: db, outbox: d.Events, memory: d.Memory,
		chats: d.Chats, agents: d.Agents, tools: d.Toolbox, runs: d.AgentRuns, evalRuns: d.EvalRuns, deals: d.CRM, flows: d.WorkflowRuns,
		nats: o.nats, queue: cfg.Queue, log: log, dns: dns}
	b.key, b.project = b.newTenant(t)
	return b
}

// testPublicDomain is the domain whose subdomains are agents' pages in the tests.
const testPublicDomain = "agents.test"

// testMailDomain is the domain of agents' email addresses in the tests.
const testMailDomain = "mail.test"

// testPublicHosts are the deployment's own hosts in the tests.
var testPublicHosts = []string{"api.platform.test", "console." + testPublicDomain}

// testConfig is the configuration of a test's processes: a queue of its own, loopback peers
// allowed, short timeouts and polls.
func testConfig(o options) config.Config {
	return config.Config{
		Role:              "test",
		Queue:             testenv.NewName(),
		DefaultCurrency:   "USD",
		AdminToken:        o.adminToken,
		PublicDomain:      testPublicDomain,
		PublicHosts:       testPublicHosts,
		MailDomain:        testMailDomain,
		SMTPRelay:         o.relay,
		MaxBodyBytes:      1 << 20,
		BodyTimeout:       o.bodyTimeout,
		RateLimit:         o.rateLimit,
		AccountBudget:     o.budget,
		RunWait:           o.runWait,
		AllowPrivate:      !o.refusePrivate,
		ProviderURL:       o.provider,
		ProviderTimeout:   cmp.Or(o.providerTimeout, 2*time.Second),
		EmbeddingURL:      o.embeddings,
		EmbeddingKey:      "test-key",
		EmbeddingModel:    "axes",
		MemoryCacheBytes:  64 << 20,
		CacheEntries:      1000,
		CacheTTL:          cmp.Or(o.cacheTTL, 30*time.Second),
		WorkerConcurrency: 4,
		WorkerPoll:        cmp.Or(o.workerPoll, time.Second),
		ShutdownTimeout:   5 * time.Second,
		RunLease:          3 * time.Second,
		FetchTimeout:      2 * time.Second,
		CrawlMaxPages:     20,
		SecretsKey:        testSecretsKey,

		// The tests name their clients' addresses in X-Forwarded-For.
		PublicRateLimit:      o.publicRate,
		PublicAgentRateLimit: o.publicAgentRate,
		TrustedProxies:       []string{"127.0.0.0/8", "::1/128"},
	}
}

// testSecretsKey seals tools' credentials in tests.
var testSecretsKey, _ = secrets.ParseKey(secrets.NewKey())

// waitABit paces a loop that polls for something to happen.
func waitABit() { time.Sleep(50 * time.Millisecond) }

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
