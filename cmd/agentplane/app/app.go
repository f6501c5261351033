// Package app is the composition root: it builds the application of one process from its
// configuration and connections, the domain services once, and what each role (the API, the
// workers, the scheduler) needs of them. `cmd/agentplane` and the tests build through it, so
// what a test runs is wired as production is.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/jobs"
	"github.com/agentplane/agentplane/shared/adapters/a2apeer"
	"github.com/agentplane/agentplane/shared/adapters/cache"
	"github.com/agentplane/agentplane/shared/adapters/channels/discord"
	"github.com/agentplane/agentplane/shared/adapters/channels/slack"
	"github.com/agentplane/agentplane/shared/adapters/channels/telegram"
	"github.com/agentplane/agentplane/shared/adapters/channels/whatsapp"
	"github.com/agentplane/agentplane/shared/adapters/dnstxt"
	"github.com/agentplane/agentplane/shared/adapters/mail"
	"github.com/agentplane/agentplane/shared/adapters/mcpclient"
	"github.com/agentplane/agentplane/shared/adapters/metrics"
	"github.com/agentplane/agentplane/shared/adapters/openapiclient"
	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/queue"
	"github.com/agentplane/agentplane/shared/adapters/ratelimit"
	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/adapters/store"
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
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/config"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/kit/secrets"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/operators"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/retention"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/stats"
	"github.com/agentplane/agentplane/shared/subscribers"
	"github.com/agentplane/agentplane/shared/tasks"
	"github.com/agentplane/agentplane/shared/tenancy"
	"github.com/agentplane/agentplane/shared/tools"
	"github.com/agentplane/agentplane/shared/usermemory"
	"github.com/agentplane/agentplane/shared/workflows"
	"github.com/agentplane/agentplane/shared/workspaces"
	"github.com/agentplane/agentplane/workers"
)

// Conns are the connections of a process to its dependencies. Whoever opened them closes them.
type Conns struct {
	DB    *mongo.Database
	Redis *redis.Client
	// RedisOpt is the Redis of the task queue.
	RedisOpt asynq.RedisConnOpt
	NATS     *nats.Conn
	// Commands counts the store's commands (nil: not counted by command).
	Commands *store.Commands
}

// Connect opens every dependency of cfg. Connections are lazy: a dependency that is down makes
// requests fail with 503 and /readyz report it, it does not stop the process.
func Connect(cfg config.Config, log *slog.Logger) (Conns, error) {
	commands := store.NewCommands(cfg.Role)
	db, err := store.Open(cfg.MongoURI, cfg.MongoDatabase, commands)
	if err != nil {
		return Conns{}, err
	}
	ropt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return Conns{}, fmt.Errorf("AGENTPLANE_REDIS_URL: %w", err)
	}
	aopt, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		return Conns{}, fmt.Errorf("AGENTPLANE_REDIS_URL: %w", err)
	}
	nc, err := events.Connect(cfg.NATSURL, "agentplane-"+cfg.Role, log)
	if err != nil {
		return Conns{}, err
	}
	return Conns{DB: db, Redis: redis.NewClient(ropt), RedisOpt: aopt, NATS: nc, Commands: commands}, nil
}

// Close closes the connections.
func (c Conns) Close(ctx context.Context) {
	c.NATS.Close()
	_ = c.Redis.Close()
	_ = c.DB.Client().Disconnect(ctx)
}

// App is the application of one process.
type App struct {
	Cfg     config.Config
	Log     *slog.Logger
	Conns   Conns
	Metrics *metrics.Metrics
	// RunPoll is how often a follower of an agent run reads it from the store when no progress
	// message came (1 s).
	RunPoll time.Duration

	tasks     *asynq.Client
	inspector *asynq.Inspector
	// closers close what the roles opened on the way (the dashboard's Redis clients).
	closers []func() error

	// notices drop changed keys, projects and agents from every process's caches.
	notices *cache.Notices

	// started is when the application was made: the first statistics recorder of a deployment
	// counts the events published since.
	started time.Time

	mu     sync.Mutex
	dom    *Domain            // made once: the roles of a process share its services (and memory's cache)
	events *outbox.Dispatcher // made once: one writer of events per process
}

// New returns the application of cfg over conns.
func New(cfg config.Config, log *slog.Logger, conns Conns) *App {
	m := metrics.New()
	if conns.Commands != nil {
		m.Register(conns.Commands)
	}
	return &App{Cfg: cfg, Log: log, Conns: conns, Metrics: m, RunPoll: time.Second, notices: cache.NewNotices(conns.NATS, log),
		tasks: asynq.NewClient(conns.RedisOpt), inspector: asynq.NewInspector(conns.RedisOpt), started: time.Now()}
}

// Close closes what the application opened (not its connections).
func (a *App) Close() {
	for _, c := range a.closers {
		_ = c()
	}
	_ = a.tasks.Close()
	_ = a.inspector.Close()
}

// Migrate creates indexes and the event stream.
func (a *App) Migrate(ctx context.Context) error {
	if err := store.Migrate(ctx, a.Conns.DB); err != nil {
		return err
	}
	return events.EnsureStream(ctx, a.Conns.NATS)
}

// Tenancy is accounts, projects and keys, uncached (for the command line).
func (a *App) Tenancy() *tenancy.Service { return tenancy.NewService(store.NewTenancy(a.Conns.DB)) }

// Events publishes domain events as changes commit, and relays the ones left behind; the roles
// of a process share it.
func (a *App) Events() (*outbox.Dispatcher, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.eventsLocked()
}

func (a *App) eventsLocked() (*outbox.Dispatcher, error) {
	if a.events != nil {
		return a.events, nil
	}
	pub, err := events.NewPublisher(a.Conns.NATS)
	if err != nil {
		return nil, err
	}
	a.events = outbox.NewDispatcher(pub, store.NewOutbox(a.Conns.DB), a.Log.With("component", "outbox"), a.Metrics.OutboxSetAside)
	return a.events, nil
}

// Domain are the services the API, the workers and the scheduler act through.
type Domain struct {
	Tenancy      *tenancy.Service
	Agents       *agents.Service
	CRM          *crm.Service
	Calendar     *calendar.Service
	Memory       *memory.Memory
	Chats        *chats.Service
	Sources      *sources.Service
	Workflows    *workflows.Service
	WorkflowRuns *workflows.Runs
	// Toolbox is what agent runs use: the built-in tools and the agents' own (Tools).
	Toolbox   *agentruns.Toolbox
	Tools     *tools.Service
	AgentRuns *agentruns.Service
	// Subscribers are agents' end users; their sessions are signed with a key derived from the
	// secrets key (none without one).
	Subscribers *subscribers.Service
	Events      *outbox.Dispatcher
	// Heartbeats are agents' scheduled prompts.
	Heartbeats *heartbeats.Service
	// Operators are the people of accounts who answer conversations in the inbox.
	Operators *operators.Service
	// UserMemory is what agents remember of their end users (each user's cached in process).
	UserMemory *usermemory.Service
	// Stats are agents' statistics, read from their stored chats.
	Stats *stats.Service
	// Channels are agents' connections to messaging platforms.
	Channels *channels.Service
	// Email is agents' inboxes: the mail they receive over SMTP and their answers.
	Email *email.Service
	// Inbox is the chats handed to the team's people.
	Inbox *inbox.Service
	// Workspaces are agents' file trees.
	Workspaces *workspaces.Service
	// Evals are agents' eval datasets.
	Evals *evals.Service
	// EvalRuns are the eval runs of agents' datasets.
	EvalRuns *evals.Runs
	// OnlineEvals grade a share of agents' live answers.
	OnlineEvals *evals.Online
}

// Domain builds the domain services once and returns them.
func (a *App) Domain() (Domain, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dom != nil {
		return *a.dom, nil
	}
	ev, err := a.eventsLocked()
	if err != nil {
		return Domain{}, err
	}
	db := a.Conns.DB
	watch, err := a.notices.Watch()
	if err != nil {
		return Domain{}, err
	}
	a.closers = append(a.closers, watch.Unsubscribe)
	size, ttl := a.Cfg.CacheEntries, a.Cfg.CacheTTL
	box, err := a.secrets()
	if err != nil {
		return Domain{}, err
	}
	mem := memory.New(cache.MemoryVersions(store.NewMemory(db), a.notices, size, ttl), a.embedder(), a.Cfg.MemoryCacheBytes, a.Log)
	d := Domain{
		Tenancy: tenancy.NewService(cache.Tenancy(store.NewTenancy(db), a.notices, size, ttl)),
		Agents: agents.NewService(cache.Agents(agents.SealKeys(store.NewAgents(db), box), a.notices, size, ttl), store.NewVersions(db), ev,
			agents.Hosts{PublicDomain: a.Cfg.PublicDomain, Own: a.Cfg.PublicHosts, TXT: dnstxt.New(a.Cfg.DNSResolver),
				Sites: store.NewWorkspaces(db)}),
		CRM:       crm.NewService(cache.CRM(store.NewCRM(db), a.notices, size, ttl), ev, a.Cfg.DefaultCurrency),
		Calendar:  calendar.NewService(store.NewCalendars(db), ev),
		Memory:    mem,
		Chats:     chats.NewService(store.NewChats(db), ev, mem, a.providers(), a.Log),
		Sources:   sources.NewService(a.sources(), ev, a.Queue(), int(a.Cfg.MaxBodyBytes), a.Log),
		Workflows: workflows.NewService(cache.Workflows(store.NewWorkflows(db), a.notices, size, ttl), ev),
		Events:    ev,
	}
	// A version of an agent records its set of memory sources; creating or deleting a source
	// makes one.
	d.Agents.UseSources(d.Sources, mem)
	d.Sources.UseVersions(d.Agents)
	d.WorkflowRuns = workflows.NewRuns(d.Workflows, a.workflowRuns(), a.Queue(), a.Log.With("component", "workflows"))
	d.WorkflowRuns.UseAgents(d.Agents)
	d.Agents.UseWorkflows(d.Workflows)
	// Agents' tools reach their users' servers through the guarded client; a call takes at
	// most its tool's time limit, which the client's own outlasts.
	guarded := safehttp.New(safehttp.Options{AllowPrivate: a.Cfg.AllowPrivate, Timeout: (tools.MaxTimeout + 10) * time.Second,
		MaxBytes: 16 << 20}).HTTPClient()
	openapi := openapiclient.New(guarded)
	connectors := map[string]tools.Connector{tools.TypeMCP: mcpclient.New(guarded), tools.TypeOpenAPI: openapi, tools.TypeHTTP: openapi,
		tools.TypeA2A: a2apeer.New(guarded)}
	d.Tools = tools.NewService(cache.Tools(store.NewTools(db), a.notices, size, ttl), connectors, box, a.Log.With("component", "tools"))
	d.Agents.UseTools(d.Tools)
	d.Workspaces = workspaces.NewService(store.NewWorkspaces(db), d.Agents,
		workspaces.Domains{DNS: dnstxt.New(a.Cfg.DNSResolver), Target: a.Cfg.PublicDomain})
	d.Toolbox = agentruns.NewToolbox(agentruns.Services{Memory: mem, CRM: d.CRM, Calendar: d.Calendar, Workflows: d.WorkflowRuns, Tools: d.Tools,
		Workspaces: d.Workspaces, Handoff: func(ctx context.Context, projectID, botID, chatID, reason, urgency string) error {
			return d.requestHandoff(ctx, projectID, botID, chatID, inbox.Request{Source: inbox.SourceTool, Reason: reason, Urgency: urgency})
		}})
	d.AgentRuns = agentruns.NewService(store.NewExecutions(db, a.Log.With("component", "runs")), d.Chats, d.Toolbox, a.Queue(), events.NewRunRelay(a.Conns.NATS),
		a.Log.With("component", "runs"), a.RunPoll)
	d.Chats.UseAgentRuns(d.AgentRuns)
	d.Chats.UseWorkspaces(d.Workspaces)
	d.Heartbeats = heartbeats.NewService(store.NewHeartbeats(db), d.Agents, d.Chats, d.AgentRuns, a.Queue(), ev,
		a.Log.With("component", "heartbeats"))
	d.Operators = operators.NewService(store.NewOperators(db), d.Tenancy)
	d.Evals = evals.NewService(store.NewEvals(db))
	d.Evals.UseTranscripts(d.transcript)
	d.EvalRuns = evals.NewRuns(store.NewEvalRuns(db), store.NewEvals(db), a.Queue(), a.Log.With("component", "evals"))
	d.OnlineEvals = evals.NewOnline(store.NewOnlineGrades(db), a.Queue())
	d.Chats.UseOnlineEvals(d.OnlineEvals)
	var sessionKey []byte
	if a.Cfg.SecretsKey != nil {
		if sessionKey, err = secrets.Derive(a.Cfg.SecretsKey, "end-user-sessions"); err != nil {
			return Domain{}, err
		}
	}
	d.Subscribers = subscribers.NewService(store.NewSubscribers(db), sessionKey, box)
	d.UserMemory = usermemory.NewService(cache.UserMemories(store.NewUserMemories(db), a.notices, size, ttl), a.Queue(),
		extractors(d), a.Log.With("component", "usermemory"))
	d.Chats.UseEndUsers(d.UserMemory)
	d.Stats = stats.NewService(store.NewStats(db))
	d.Stats.UseOnline(store.NewOnlineGrades(db))
	d.Channels = channels.NewService(store.NewChannels(db), a.platforms(), box, ev, a.Queue(),
		channels.Services{Agents: d.Agents, Chats: d.Chats, Runs: d.AgentRuns, Subscribers: d.Subscribers, Limit: a.agentLimit(),
			Counted: a.Metrics.Channel})
	relay, err := a.relay()
	if err != nil {
		return Domain{}, err
	}
	d.Email = email.NewService(store.NewEmails(db), a.Cfg.MailDomain, relay, ev, a.Queue(),
		email.Services{Agents: d.Agents, Chats: d.Chats, Runs: d.AgentRuns, Subscribers: d.Subscribers, Limit: a.agentLimit(), NewPart: mail.NewText})
	// A person's reply in the inbox goes where the end user is: a channel's conversation, an
	// email thread.
	deliver := func(ctx context.Context, projectID, botID, chatID, text, key string) error {
		return errors.Join(d.Channels.ToChat(ctx, projectID, botID, chatID, text, key), d.Email.ToChat(ctx, projectID, botID, chatID, text, key))
	}
	d.Inbox = inbox.NewService(store.NewHandoffs(db), ev, inbox.Services{Chats: d.Chats, Deliver: deliver,
		Operators: func(ctx context.Context, accountID, projectID, operatorID string) error {
			op, err := d.Operators.Get(ctx, accountID, operatorID)
			if err == nil && !slices.Contains(op.ProjectIDs, projectID) {
				err = apperr.NotFoundf(operators.Resource)
			}
			return err
		},
		Online: func(ctx context.Context, accountID, projectID string) ([]inbox.Seat, error) {
			list, _, err := d.Operators.List(ctx, accountID, projectID, paging.Page{Page: 1, PerPage: paging.MaxPerPage})
			var seats []inbox.Seat
			for _, op := range list {
				if op.Availability == operators.AvailabilityOnline {
					seats = append(seats, inbox.Seat{OperatorID: op.ID, MaxOpen: op.MaxOpen})
				}
			}
			return seats, err
		}})
	d.Chats.UseHandoffs(func(ctx context.Context, projectID, botID, chatID, source, reason, channel string) error {
		return d.requestHandoff(ctx, projectID, botID, chatID, inbox.Request{Source: source, Reason: reason, Channel: channel})
	})
	a.dom = &d
	return d, nil
}

// requestHandoff flags a chat for a person of the team.
func (d *Domain) requestHandoff(ctx context.Context, projectID, botID, chatID string, r inbox.Request) error {
	_, _, err := d.Inbox.Request(ctx, projectID, botID, chatID, r)
	return err
}

// extractors pick the model that extracts a message's facts: the one that answered its turn
// (the request's provider, else the agent's key, else the configured provider or the offline
// model).
func extractors(d Domain) usermemory.Models {
	return func(ctx context.Context, p tasks.MemoryExtractPayload) (llm.Model, error) {
		bot, err := d.Agents.Get(ctx, p.ProjectID, p.BotID)
		if err != nil {
			return nil, err
		}
		return d.Chats.Model(chats.Input{ProviderHost: p.ProviderHost, ProviderKey: p.ProviderKey}, bot), nil
	}
}

// secrets is the box that seals tools' credentials: empty (sealing refused) without a key.
func (a *App) secrets() (secrets.Box, error) {
	if a.Cfg.SecretsKey == nil {
		return secrets.Box{}, nil
	}
	return secrets.New(a.Cfg.SecretsKey)
}

// API is everything the HTTP API needs.
func (a *App) API() (api.Deps, error) {
	d, err := a.Domain()
	if err != nil {
		return api.Deps{}, err
	}
	return api.Deps{
		Logger:        a.Log,
		Tenancy:       d.Tenancy,
		Agents:        d.Agents,
		CRM:           d.CRM,
		Calendar:      d.Calendar,
		Workflows:     d.Workflows,
		WorkflowRuns:  d.WorkflowRuns,
		Heartbeats:    d.Heartbeats,
		Operators:     d.Operators,
		Workspaces:    d.Workspaces,
		Evals:         d.Evals,
		EvalRuns:      d.EvalRuns,
		OnlineEvals:   d.OnlineEvals,
		PublicDomain:  a.Cfg.PublicDomain,
		OwnHosts:      a.Cfg.PublicHosts,
		Sources:       d.Sources,
		Memory:        d.Memory,
		Chats:         d.Chats,
		Runs:          d.AgentRuns,
		Tools:         d.Tools,
		Subscribers:   d.Subscribers,
		Metrics:       a.Metrics,
		RunWait:       a.Cfg.RunWait,
		Redis:         a.Conns.Redis,
		Checks:        a.Checks(),
		AdminToken:    a.Cfg.AdminToken,
		MaxBodyBytes:  a.Cfg.MaxBodyBytes,
		BodyTimeout:   a.Cfg.BodyTimeout,
		RateLimit:     a.Cfg.RateLimit,
		AccountBudget: a.Cfg.AccountBudget,
		// The end users' limits, per client address and per agent.
		PublicRateLimit:      a.Cfg.PublicRateLimit,
		PublicAgentRateLimit: a.Cfg.PublicAgentRateLimit,
		TrustedProxies:       a.Cfg.TrustedProxies,
		Queues:               a.dashboard(),
		// What agents remember of their end users: listed, counted and deleted.
		UserMemory: d.UserMemory,
		// Agents' statistics.
		Stats: d.Stats,
		// Agents' channels, their webhook URLs under the public URL.
		Channels:  d.Channels,
		PublicURL: a.Cfg.PublicURL,
		// Agents' email inboxes.
		Email: d.Email,
		// The inbox of chats handed to people, and its live stream.
		Inbox: d.Inbox,
		Watch: events.Watch(a.Conns.NATS),
	}, nil
}

// Checks are the readiness checks of the process's dependencies.
func (a *App) Checks() []api.Check {
	return []api.Check{
		{Name: "mongodb", Ping: func(ctx context.Context) error { return store.Ping(ctx, a.Conns.DB) }},
		{Name: "redis", Ping: func(ctx context.Context) error { return a.Conns.Redis.Ping(ctx).Err() }},
		{Name: "nats", Ping: func(ctx context.Context) error { return events.Ping(ctx, a.Conns.NATS) }},
	}
}

// dashboard is asynqmon, the queue dashboard, read-only and showing task payloads redacted;
// none without an admin token to guard it.
func (a *App) dashboard() http.Handler {
	if a.Cfg.AdminToken == "" {
		return nil
	}
	redacted := asynqmon.PayloadFormatterFunc(func(_ string, payload []byte) string { return tasks.Redacted(payload) })
	h := asynqmon.New(asynqmon.Options{RootPath: api.QueuesPath, RedisConnOpt: a.Conns.RedisOpt, ReadOnly: true,
		PayloadFormatter: redacted, ResultFormatter: asynqmon.ResultFormatterFunc(func(_ string, result []byte) string { return tasks.Redacted(result) })})
	a.closers = append(a.closers, h.Close)
	return h
}

// Worker is everything the worker role needs: the task handlers' services and the workflow
// triggers.
func (a *App) Worker() (workers.Deps, error) {
	d, err := a.Domain()
	if err != nil {
		return workers.Deps{}, err
	}
	fetch := safehttp.New(safehttp.Options{AllowPrivate: a.Cfg.AllowPrivate, Timeout: a.Cfg.FetchTimeout, MaxBytes: a.Cfg.FetchMaxBytes})
	// Webhooks go through the SSRF guard and follow no redirect.
	hooks := safehttp.New(safehttp.Options{AllowPrivate: a.Cfg.AllowPrivate, Timeout: time.Minute, MaxBytes: 1 << 20, MaxRedirects: -1})
	runs := agentruns.NewRunner(store.NewExecutions(a.Conns.DB, a.Log.With("component", "runs")), d.Chats, d.Agents, d.Toolbox, events.NewRunRelay(a.Conns.NATS),
		a.Log.With("component", "runs"), a.Cfg.RunLease, a.Metrics.RunCycle)
	runs.OnStop(func(ctx context.Context, e agentruns.Execution) error {
		return errors.Join(d.Heartbeats.Settle(ctx, e), d.Channels.Settle(ctx, e), d.Email.Settle(ctx, e))
	})
	return workers.Deps{
		Logger:          a.Log,
		Redis:           a.Conns.RedisOpt,
		Queue:           a.Cfg.Queue,
		Concurrency:     a.Cfg.WorkerConcurrency,
		ShutdownTimeout: a.Cfg.ShutdownTimeout,
		Poll:            a.Cfg.WorkerPoll,
		Metrics:         a.Metrics,
		Sources: sources.NewIngester(a.sources(), d.Events, fetch, a.embedder(), a.Cfg.CrawlMaxPages,
			a.Log.With("component", "ingest"), a.Metrics.Ingested),
		Runs:       runs,
		Heartbeats: d.Heartbeats,
		Workflows: workflows.NewExecutor(a.workflowRuns(), d.Events, workflows.Actors{Bots: d.Agents, CRM: d.CRM,
			Sources: d.Sources, Chats: d.Chats, Webhooks: hooks, Channels: d.Channels,
			Handoff: func(ctx context.Context, projectID, botID, chatID, reason, urgency string) error {
				return d.requestHandoff(ctx, projectID, botID, chatID, inbox.Request{Source: inbox.SourceWorkflow, Reason: reason, Urgency: urgency})
			}}, a.Log.With("component", "workflows"), a.Cfg.RunLease),
		Triggers: workers.Triggers{NATS: a.Conns.NATS, Durable: "workflows-" + a.Cfg.Queue, Runs: d.WorkflowRuns, RetryDelay: time.Second},
		// End users' memories: what their messages say about them is extracted here.
		UserMemory: d.UserMemory,
		// Channels: their messages answered, the answers sent.
		Channels: d.Channels,
		// Email: the mail agents receive answered, the answers sent.
		Email: d.Email,
		// Online grading: live answers graded.
		OnlineEvals: d.OnlineEvals,
		// Eval runs: their cases answered and graded.
		Evals: evals.NewRunner(store.NewEvalRuns(a.Conns.DB), d.evalAgents, a.Cfg.RunLease, evalConcurrency, a.Log.With("component", "evals")),
		// Statistics: the chat events are folded into the agents' hours here.
		Stats: stats.NewRecorder(store.NewStats(a.Conns.DB), d.Agents, store.NewChats(a.Conns.DB),
			events.Tail(a.Conns.NATS, events.SubjectPrefix+"*.chat.message.>", a.Log), ids.New(), a.started, a.Log),
	}, nil
}

// agentLimit takes one message of an agent's rate limit for a sender, in Redis.
func (a *App) agentLimit() func(context.Context, agents.Bot, string) error {
	limits := ratelimit.New(redis_rate.NewLimiter(a.Conns.Redis))
	return func(ctx context.Context, bot agents.Bot, key string) error {
		_, _, err := limits.Allow(ctx, bot, key)
		return err
	}
}

// SMTP is the SMTP listener of agents' inboxes, taking mail for the configured mail domain
// into the domain's inboxes.
func (a *App) SMTP() (*mail.Server, error) {
	d, err := a.Domain()
	if err != nil {
		return nil, err
	}
	return mail.NewServer(mail.Config{Domain: a.Cfg.MailDomain, Logger: a.Log.With("component", "smtp")}, d.Email)
}

// relay is the SMTP relay agents' email answers go out through: nil without one configured
// (answers are kept unsent).
func (a *App) relay() (email.Sender, error) {
	if a.Cfg.SMTPRelay == "" {
		return nil, nil
	}
	r, err := mail.NewRelay(a.Cfg.SMTPRelay)
	if err != nil {
		return nil, fmt.Errorf("AGENTPLANE_SMTP_RELAY: %w", err)
	}
	return r, nil
}

// platforms are the messaging platforms channels reach, through the SSRF guard.
func (a *App) platforms() map[string]channels.Platform {
	client := safehttp.New(safehttp.Options{AllowPrivate: a.Cfg.AllowPrivate, Timeout: 30 * time.Second, MaxBytes: 4 << 20, MaxRedirects: -1}).HTTPClient()
	return map[string]channels.Platform{channels.TypeSlack: slack.New(client), channels.TypeTelegram: telegram.New(client),
		channels.TypeWhatsApp: whatsapp.New(client), channels.TypeDiscord: discord.New(client)}
}

// Scheduler is everything the scheduler role needs.
func (a *App) Scheduler() (jobs.Deps, error) {
	d, err := a.Domain()
	if err != nil {
		return jobs.Deps{}, err
	}
	return jobs.Deps{Logger: a.Log, Outbox: d.Events, Runs: d.AgentRuns, EvalRuns: d.EvalRuns, Metrics: a.Metrics, Heartbeats: d.Heartbeats,
		Sources:   sources.NewPlanner(a.sources(), a.Queue(), a.Cfg.SourceStuckAfter, a.Log.With("component", "planner")),
		Schedules: workflows.NewSchedules(d.WorkflowRuns, a.Log.With("component", "schedules")),
		Retention: retention.New(store.NewRetention(a.Conns.DB), a.Cfg.Retention, retention.DefaultBatch, a.Log.With("component", "retention")),
		CRM:       d.CRM}, nil
}

// sources is the sources' store, whose changes of agents' live lists every process's cache of
// them hears of.
func (a *App) sources() store.Sources {
	return store.NewSources(a.Conns.DB).OnLiveChange(a.notices.LiveChanged)
}

// workflowRuns is the workflow runs' store, with the projects' signing secrets cached.
func (a *App) workflowRuns() workflows.RunRepo {
	return cache.WorkflowRuns(store.NewWorkflowRuns(a.Conns.DB), a.Cfg.CacheEntries, a.Cfg.CacheTTL)
}

// Queue is the task queue of the process.
func (a *App) Queue() *queue.Queue {
	return queue.New(a.tasks, a.inspector, a.Conns.Redis, a.Cfg.Queue)
}

// embedder is the configured embeddings endpoint, or nil for lexical retrieval only. The
// operator configures it, so it is called directly, not through the guarded client.
func (a *App) embedder() memory.Embedder {
	if a.Cfg.EmbeddingURL == "" {
		return nil
	}
	return provider.NewEmbedder(a.Cfg.EmbeddingURL, a.Cfg.EmbeddingKey, a.Cfg.EmbeddingModel, &http.Client{Timeout: 30 * time.Second, Transport: provider.Transport()})
}

// providerClients is how many clients of provider hosts and keys that requests and agents name
// a process keeps for reuse.
const providerClients = 256

// providers are the model providers chats use: the configured one (or the offline model), and
// for hosts requests name, clients through the SSRF guard. Streams may run long: the guard's
// own time limit is the provider timeout's business here.
func (a *App) providers() chats.Providers {
	guarded := safehttp.New(safehttp.Options{AllowPrivate: a.Cfg.AllowPrivate, Timeout: 30 * time.Minute, MaxBytes: 64 << 20}).HTTPClient()
	guarded.Transport = a.Metrics.Provider(guarded.Transport)
	pool := provider.NewPool(providerClients)
	open := func(e llm.Endpoint) llm.Model {
		c := provider.Config{BaseURL: e.BaseURL, APIKey: e.APIKey, Timeout: a.Cfg.ProviderTimeout}
		if e.Guarded {
			c.HTTPClient = guarded
		}
		return pool.OpenAI(c)
	}
	p := chats.Providers{Default: provider.NewOffline(), BaseURL: a.Cfg.ProviderURL, Open: open}
	if a.Cfg.ProviderURL != "" {
		p.Default = provider.NewOpenAI(provider.Config{BaseURL: a.Cfg.ProviderURL, APIKey: a.Cfg.ProviderKey, Timeout: a.Cfg.ProviderTimeout,
			HTTPClient: &http.Client{Transport: a.Metrics.Provider(provider.Transport())}})
	}
	return p
}

// WatchQueue reports the depth of the process's queue in its metrics.
func (a *App) WatchQueue() { a.Metrics.WatchQueue(a.inspector, a.Cfg.Queue) }

// transcriptMessages bounds how many of a chat's last messages a dataset built from it reads.
const transcriptMessages = 500

// transcript is a chat of the agent as evals read it: its last messages with text, the end
// user's as user and the agent's or an operator's as assistant.
func (d *Domain) transcript(ctx context.Context, projectID, botID, chatID string) ([]evals.Turn, error) {
	chat, err := d.Chats.Get(ctx, projectID, botID, chatID)
	if err != nil {
		return nil, err
	}
	msgs, err := d.Chats.Messages(ctx, chat, chat.Messages-transcriptMessages+1, chat.Messages)
	if err != nil {
		return nil, err
	}
	turns := make([]evals.Turn, 0, len(msgs))
	for _, m := range msgs {
		role := evals.RoleAssistant
		if m.Role == chats.RoleUser {
			role = evals.RoleUser
		}
		if strings.TrimSpace(m.Content) != "" {
			turns = append(turns, evals.Turn{Role: role, Content: m.Content})
		}
	}
	return turns, nil
}
