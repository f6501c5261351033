package api_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/store"
	"github.com/agentplane/agentplane/shared/tenancy"
	"github.com/agentplane/agentplane/shared/testenv"
	"github.com/agentplane/agentplane/shared/workflows"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bundle is what an API test needs: a real server on real stores, and a tenant to call it as.
type bundle struct {
	client  *apitest.Client
	tenancy *tenancy.Service
	db      *mongo.Database
	outbox  *outbox.Dispatcher
	// key and project belong to one fresh account.
	key     string
	project tenancy.Project
}

const adminToken = "test-admin-token"

type option func(*api.Deps)

func withRateLimit(n int) option       { return func(d *api.Deps) { d.RateLimit = n } }
func withAdminToken(t string) option   { return func(d *api.Deps) { d.AdminToken = t } }
func withRedis(r *redis.Client) option { return func(d *api.Deps) { d.Redis = r } }
func withChecks(c ...api.Check) option { return func(d *api.Deps) { d.Checks = c } }

func setup(t testing.TB, opts ...option) *bundle {
	t.Helper()
	db := testenv.Mongo(t)
	ten := tenancy.NewService(store.NewTenancy(db))
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	ev := dispatcher(t, db, testenv.NATS(t), log)
	deps := api.Deps{
		Logger:       log,
		Tenancy:      ten,
		Agents:       agents.NewService(store.NewAgents(db), ev),
		CRM:          crm.NewService(store.NewCRM(db), ev, "USD"),
		Calendar:     calendar.NewService(store.NewCalendars(db), ev),
		Workflows:    workflows.NewService(store.NewWorkflows(db), ev),
		Redis:        testenv.Redis(t),
		AdminToken:   adminToken,
		MaxBodyBytes: 1 << 20,
		RateLimit:    1000,
	}
	deps.Checks = []api.Check{
		{Name: "mongodb", Ping: func(ctx context.Context) error { return store.Ping(ctx, db) }},
		{Name: "redis", Ping: func(ctx context.Context) error { return deps.Redis.Ping(ctx).Err() }},
	}
	for _, o := range opts {
		o(&deps)
	}
	b := &bundle{client: apitest.New(t, api.NewServer(deps)), tenancy: ten, db: db, outbox: ev}
	b.key, b.project = b.newTenant(t)
	return b
}

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
	return outbox.NewDispatcher(pub, store.NewOutbox(db), log)
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
func expect(t *testing.T, res *apitest.Response, status int, code string) {
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
