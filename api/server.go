// Package api is the HTTP front end: router, middleware, handlers, error mapping and the
// OpenAPI document.
package api

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/agentplane/agentplane/api/a2a"
	"github.com/agentplane/agentplane/api/hooks"
	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/api/mcp"
	"github.com/agentplane/agentplane/api/openai"
	"github.com/agentplane/agentplane/api/public"
	"github.com/agentplane/agentplane/shared/adapters/metrics"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/heartbeats"
	"github.com/agentplane/agentplane/shared/inbox"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/operators"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/stats"
	"github.com/agentplane/agentplane/shared/subscribers"
	"github.com/agentplane/agentplane/shared/tenancy"
	"github.com/agentplane/agentplane/shared/tools"
	"github.com/agentplane/agentplane/shared/usermemory"
	"github.com/agentplane/agentplane/shared/workflows"
	"github.com/agentplane/agentplane/shared/workspaces"
)

// Check is one readiness check: a dependency's name and how to reach it.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Deps is everything the API needs; NewServer takes nothing from globals.
type Deps struct {
	Logger    *slog.Logger
	Tenancy   *tenancy.Service
	Agents    *agents.Service
	CRM       *crm.Service
	Calendar  *calendar.Service
	Workflows *workflows.Service
	Sources   *sources.Service
	Memory    *memory.Memory
	Chats     *chats.Service
	Runs      *agentruns.Service
	// Tools are agents' own tools (MCP servers).
	Tools *tools.Service
	// Subscribers are agents' end users and their sessions (the hosted chat page).
	Subscribers *subscribers.Service
	// WorkflowRuns starts workflow runs by hand and reads their history.
	WorkflowRuns *workflows.Runs
	// Heartbeats are agents' scheduled prompts (not Heartbeat, the streams' keep-alive).
	Heartbeats *heartbeats.Service
	// Operators are the people of accounts who answer conversations in the inbox.
	Operators *operators.Service
	// RunWait bounds how long a non-streamed agent run is waited for.
	RunWait time.Duration
	Redis   redis.UniversalClient
	Checks  []Check
	// AdminToken guards /v1/admin/*; empty turns the admin routes off.
	AdminToken string
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// BodyTimeout bounds the time a request's body takes to arrive (30 s when zero).
	BodyTimeout time.Duration
	// RateLimit is requests per minute per API key; 0 is no limit.
	RateLimit int
	// AccountBudget is how many requests of one account the server works on at once; 0 is no
	// bound. BudgetWait is how long a request waits for its turn (10 s when zero).
	AccountBudget int
	BudgetWait    time.Duration
	// PublicRateLimit is requests per minute per client address to the end users' endpoints,
	// PublicAgentRateLimit per agent; 0 is no limit.
	PublicRateLimit      int
	PublicAgentRateLimit int
	// TrustedProxies are the CIDRs whose X-Forwarded-For names the client address (none: the
	// connection's address is the client's).
	TrustedProxies []string
	// Heartbeat spaces the comment lines of event streams.
	Heartbeat time.Duration
	// Metrics are the process's metrics, served at /metrics; nil makes the server's own.
	Metrics *metrics.Metrics
	// Queues is the queue dashboard, served under QueuesPath behind the admin token; nil is none.
	Queues http.Handler
	// UserMemory is what agents remember of their end users.
	UserMemory *usermemory.Service
	// Stats are agents' statistics.
	Stats *stats.Service
	// Channels are agents' connections to messaging platforms.
	Channels *channels.Service
	// PublicURL is the deployment's public URL, under which channels' webhook URLs are given
	// ("": the URL a request came to).
	PublicURL string
	// Email is agents' email inboxes.
	Email *email.Service
	// Inbox is the chats handed to the team's people.
	Inbox *inbox.Service
	// Workspaces are agents' file trees.
	Workspaces *workspaces.Service
	// Evals are agents' eval datasets.
	Evals *evals.Service
	// EvalRuns are the eval runs of agents' datasets.
	EvalRuns *evals.Runs
	// OnlineEvals are the gradings of agents' live answers.
	OnlineEvals *evals.Online
	// PublicDomain is the domain whose subdomains are agents' pages and published workspaces'
	// sites ("" for none).
	PublicDomain string
	// OwnHosts are the deployment's own host names (its API's): no site's custom domain.
	OwnHosts []string
	// Watch streams a project's domain events of the types a subject pattern selects, as they
	// are published (the inbox's live stream).
	Watch func(ctx context.Context, projectID, types string) (<-chan outbox.Event, error)
}

// QueuesPath is where the queue dashboard is served.
const QueuesPath = "/admin/queues"

type server struct {
	log          *slog.Logger
	tenancy      *tenancy.Service
	agents       *agents.Service
	crm          *crm.Service
	calendar     *calendar.Service
	workflows    *workflows.Service
	sources      *sources.Service
	memory       *memory.Memory
	chats        *chats.Service
	runs         *agentruns.Service
	tools        *tools.Service
	subscribers  *subscribers.Service
	workflowRuns *workflows.Runs
	heartbeats   *heartbeats.Service
	operators    *operators.Service
	runWait      time.Duration
	heartbeat    time.Duration
	metrics      *metrics.Metrics
	limiter      *redis_rate.Limiter
	checks       []Check
	queues       http.Handler
	adminToken   string
	decoder      httpx.Decoder
	turns        httpx.Turns
	bodyTimeout  time.Duration
	rateLimit    int
	budget       *keylock.Locks // by account, nil without a budget
	budgetWait   time.Duration
	// userMemory is what agents remember of their end users.
	userMemory *usermemory.Service
	// stats are agents' statistics.
	stats     *stats.Service
	channels  *channels.Service
	publicURL string
	// publicDomain is the domain whose subdomains are agents' pages and workspaces' sites.
	publicDomain string
	// ownHosts are the deployment's own host names, never looked up as a site's domain.
	ownHosts []string
	email    *email.Service
	inbox    *inbox.Service
	watch    func(ctx context.Context, projectID, types string) (<-chan outbox.Event, error)
	// workspaces are agents' file trees.
	workspaces *workspaces.Service
	// evals are agents' eval datasets, evalRuns their runs.
	evals    *evals.Service
	evalRuns *evals.Runs
	// online grades agents' live answers.
	online *evals.Online
	// openAI is the OpenAI-compatible door, mcp the MCP one, public the end users' one, hooks
	// the messaging platforms'.
	openAI *openai.Door
	mcp    *mcp.Door
	a2a    *a2a.Door
	public *public.Door
	hooks  *hooks.Door
}

// NewServer returns the HTTP handler of the whole API.
func NewServer(d Deps) http.Handler {
	if d.Heartbeat <= 0 {
		d.Heartbeat = 15 * time.Second
	}
	if d.RunWait <= 0 {
		d.RunWait = time.Minute
	}
	if d.Metrics == nil {
		d.Metrics = metrics.New()
	}
	s := &server{
		log:          d.Logger,
		tenancy:      d.Tenancy,
		agents:       d.Agents,
		crm:          d.CRM,
		calendar:     d.Calendar,
		workflows:    d.Workflows,
		sources:      d.Sources,
		memory:       d.Memory,
		chats:        d.Chats,
		runs:         d.Runs,
		tools:        d.Tools,
		subscribers:  d.Subscribers,
		workflowRuns: d.WorkflowRuns,
		heartbeats:   d.Heartbeats,
		operators:    d.Operators,
		workspaces:   d.Workspaces,
		evals:        d.Evals,
		evalRuns:     d.EvalRuns,
		online:       d.OnlineEvals,
		runWait:      d.RunWait,
		heartbeat:    d.Heartbeat,
		metrics:      d.Metrics,
		limiter:      redis_rate.NewLimiter(d.Redis),
		checks:       d.Checks,
		queues:       d.Queues,
		adminToken:   d.AdminToken,
		bodyTimeout:  cmp.Or(d.BodyTimeout, 30*time.Second),
		rateLimit:    d.RateLimit,
		budgetWait:   cmp.Or(d.BudgetWait, 10*time.Second),
	}
	s.decoder = httpx.Decoder{MaxBody: d.MaxBodyBytes, BodyTimeout: s.bodyTimeout}
	s.turns = httpx.Turns{Chats: d.Chats, Runs: d.Runs, RunWait: d.RunWait}
	if d.AccountBudget > 0 {
		s.budget = &keylock.Locks{Holders: d.AccountBudget}
	}
	s.userMemory = d.UserMemory
	s.stats = d.Stats
	s.channels, s.publicURL = d.Channels, strings.TrimRight(d.PublicURL, "/")
	s.publicDomain, s.ownHosts = d.PublicDomain, d.OwnHosts
	s.hooks = &hooks.Door{Channels: d.Channels}
	s.inbox, s.watch, s.email = d.Inbox, d.Watch, d.Email
	// agentAllow takes one message of the agent's rate limit for the key keyID.
	agentAllow := func(ctx context.Context, bot agents.Bot, keyID string) error {
		_, err := s.botAllow(ctx, bot, keyID)
		return err
	}
	s.mcp = mcp.New(mcp.Door{Log: d.Logger, Tenancy: d.Tenancy, Chats: d.Chats, Runs: d.Runs, Memory: d.Memory, Tools: d.Tools, RunWait: d.RunWait,
		Bot: s.a2aBot, AgentAllow: agentAllow})
	s.a2a = a2a.New(a2a.Door{Log: d.Logger, Chats: d.Chats, Runs: d.Runs, Tools: d.Tools, Sources: d.Sources, RunWait: d.RunWait, PublicURL: s.publicURL, Decoder: s.decoder, Heartbeat: d.Heartbeat,
		Bot: s.a2aBot, AgentAllow: agentAllow})
	s.openAI = &openai.Door{Tenancy: d.Tenancy, Agents: d.Agents, Turns: s.turns, Decoder: s.decoder, Heartbeat: d.Heartbeat,
		Bot: func(c *gin.Context, projectID, botID string) (agents.Bot, error) {
			return s.bot(c, &scope{ProjectID: projectID, BotID: botID})
		},
		AgentLimit: s.agentLimit}
	s.public = &public.Door{Agents: d.Agents, Chats: d.Chats, Runs: d.Runs, Subscribers: d.Subscribers, Turns: s.turns, Decoder: s.decoder,
		Heartbeat: d.Heartbeat, Limiter: s.limiter, Rate: d.PublicRateLimit, AgentRate: d.PublicAgentRateLimit, Budget: s.budget, BudgetWait: s.budgetWait,
		AgentAllow: agentAllow, Watch: d.Watch}
	r := newEngine()
	if err := r.SetTrustedProxies(d.TrustedProxies); err != nil {
		s.log.Error("trusted proxies refused: the connection's address is the client's", "error", err)
		_ = r.SetTrustedProxies(nil)
	}
	s.routes(r)
	return r
}

// NewOps returns the operational endpoints of a role that serves no API (worker, scheduler):
// /healthz, /readyz over checks and /metrics, answering as the API's own do.
func NewOps(log *slog.Logger, checks []Check, m *metrics.Metrics) http.Handler {
	s := &server{log: log, checks: checks, metrics: m}
	r := newEngine()
	s.opsRoutes(r)
	return r
}

func newEngine() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.ContextWithFallback = true
	r.HandleMethodNotAllowed = true
	r.RemoveExtraSlash = false
	// A path that is not a route is 404 with the error body, not an HTML redirect to a near one.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	return r
}
