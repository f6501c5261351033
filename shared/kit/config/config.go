// Package config loads agentplane's configuration from AGENTPLANE_ environment variables (and
// the standard OTEL_ ones of tracing). It is the only place that reads the environment.
package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/secrets"
)

// Var describes one environment variable: docs/configuration.md's table is generated from this list
// (`go generate ./shared/kit/config`, TestConfigurationPage) and the docker-compose test is checked
// against it.
type Var struct {
	Name        string
	Default     string
	Description string
}

// Vars lists every variable the binary reads.
var Vars = []Var{
	{"AGENTPLANE_HTTP_ADDR", "`:8080` (`127.0.0.1:8080` for `dev`)", "Listen address of the HTTP API."},
	{"AGENTPLANE_DATA_DIR", "`./data`", "Where `dev` keeps the embedded stores (MongoDB-compatible store, Redis, JetStream)."},
	{"AGENTPLANE_MONGO_URI", "`mongodb://127.0.0.1:27017` (`dev`: embedded store)", "MongoDB connection string. Set in `dev` to use a real MongoDB instead of the embedded store."},
	{"AGENTPLANE_MONGO_DATABASE", "`agentplane`", "MongoDB database name."},
	{"AGENTPLANE_DEV_MONGO_ADDR", "`127.0.0.1:27018`", "Loopback address where `dev` serves its embedded MongoDB-compatible store, for `mongosh` and the CLI. When unset and the port is taken, `dev` takes a free one and prints it in its banner."},
	{"AGENTPLANE_REDIS_URL", "`redis://127.0.0.1:6379/0` (`dev`: embedded)", "Redis URL (asynq queues, rate limits)."},
	{"AGENTPLANE_NATS_URL", "`nats://127.0.0.1:4222` (`dev`: in-process server)", "NATS URL (JetStream domain events, run progress)."},
	{"AGENTPLANE_PUBLIC_DOMAIN", "unset", "A domain whose subdomains are agents' pages and published workspaces' sites: `https://<subdomain>.<domain>/` serves the page of the agent with that subdomain, or the site of the workspace published there (point a wildcard DNS record and certificate at the API). An agent's own `domain`, once verified, is served at its root whether or not this is set."},
	{"AGENTPLANE_PUBLIC_URL", "unset (the URL each request came to)", "The API's public URL as the internet reaches it (`https://api.example.com`): channels' webhook URLs (`/hooks/{type}/{id}`), which messaging platforms call, are given under it."},
	{"AGENTPLANE_MAIL_DOMAIN", "`localhost`", "The mail domain of agents' inboxes: each agent answers mail to `<address>@<domain>` (its `address` in `/v1/bot/email/settings`, by default its subdomain). Point the domain's MX at the relay in front of the SMTP listener."},
	{"AGENTPLANE_SMTP_ADDR", "unset (listener off; `dev`: a free loopback port, printed in its banner)", "Listen address of the SMTP listener of agents' inboxes (`:2525`). It takes mail only for agents' addresses at `AGENTPLANE_MAIL_DOMAIN`, asks for no authentication and offers no TLS: put it behind the deployment's inbound relay (which checks SPF/DKIM and adds `Authentication-Results`), never on the open internet."},
	{"AGENTPLANE_SMTP_RELAY", "unset (answers kept unsent)", "The relay agents' email answers go out through: `smtp://user:password@host:port` (STARTTLS when offered; 587 by default) or `smtps://...` (TLS; 465). Without it, answers are kept with status `unsent`."},
	{"AGENTPLANE_PUBLIC_HOSTS", "unset", "Comma-separated host names of this deployment (its API's, e.g. `api.example.com`): no agent may take them, or names under them, as its own `domain`, nor, when they are under `AGENTPLANE_PUBLIC_DOMAIN`, their label as its `subdomain`."},
	{"AGENTPLANE_DNS_RESOLVER", "unset (the system's resolver)", "`host:port` of the DNS server that agents' domain verification records (TXT) are looked up with."},
	{"AGENTPLANE_ADMIN_TOKEN", "unset (admin routes off; `dev` generates one)", "Bearer token for `/v1/admin/*`, the queue dashboard at `/admin/queues/` and the runtime profiles at `/debug/pprof/`."},
	{"AGENTPLANE_SECRETS_KEY", "unset (`dev` makes one and keeps it in its data dir)", "32 random bytes in base64 (`openssl rand -base64 32`): the AES-256-GCM key that seals the credentials of agents' tools at rest, and from which the key signing end users' sessions (the hosted chat page) is derived. Without it, tools that need credentials cannot be added (503 `secrets_key_missing`) and agents' pages cannot open sessions (503 `sessions_unavailable`). Every role needs the same key; changing it makes stored credentials unreadable and ends every session."},
	{"AGENTPLANE_DEV_API_KEY", "unset (`dev` creates a key on first start)", "Fixes the API key of the `dev` account."},
	{"AGENTPLANE_MAX_BODY_BYTES", "`1048576`", "Largest accepted request body; larger bodies get 413."},
	{"AGENTPLANE_BODY_TIMEOUT", "`30s`", "Time a request's body may take to arrive once its headers have (headers get 10 s); a slower body gets 408 and the connection is closed."},
	{"AGENTPLANE_RATE_LIMIT", "`600`", "Requests per minute allowed per API key (0 turns the limit off)."},
	{"AGENTPLANE_ACCOUNT_CONCURRENCY", "`32`", "Requests of one account an API process works on at once, streams included; more wait their turn, up to 10 s, then answer 429 `account_busy` (0 turns the budget off). The visitors of one project's agents (`/public/v1/chat`) have a budget of the same size of their own (429 `visitors_busy`)."},
	{"AGENTPLANE_PUBLIC_RATE_LIMIT", "`120`", "Requests per minute one client address may make to the end users' endpoints (`/public/*`: agents' pages and widgets), whatever the agent; more answer 429 `rate_limited` (0 turns the limit off)."},
	{"AGENTPLANE_PUBLIC_AGENT_RATE_LIMIT", "`3000`", "Requests per minute all visitors together may make to one agent's end-user endpoints; more answer 429 `agent_rate_limited` (0 turns the limit off)."},
	{"AGENTPLANE_TRUSTED_PROXIES", "`127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7`", "Addresses (CIDRs, comma-separated) of the proxies and load balancers in front of the API: from them, `X-Forwarded-For` names the client address the end users' limits count; from any other, the connection's address counts. `none` trusts none."},
	{"AGENTPLANE_DEFAULT_CURRENCY", "`USD`", "ISO 4217 currency of deals created without one."},
	{"AGENTPLANE_ALLOW_PRIVATE_NETWORKS", "`false`", "Lets outbound fetches (web pages, documents, provider hosts, webhooks) reach loopback, private and other special-purpose addresses and any port. Only for local setups."},
	{"AGENTPLANE_FETCH_TIMEOUT", "`20s`", "Time limit of one outbound fetch, body included."},
	{"AGENTPLANE_FETCH_MAX_BYTES", "`10485760`", "Largest response body an outbound fetch reads; larger pages fail their source."},
	{"AGENTPLANE_CRAWL_MAX_PAGES", "`20`", "Pages a `url` memory source crawls on its site, the first included."},
	{"AGENTPLANE_PROVIDER_URL", "unset (the built-in offline model answers)", "Base URL of the default OpenAI-compatible model provider (e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`). A request's `provider_host` overrides it."},
	{"AGENTPLANE_PROVIDER_KEY", "unset", "API key of the default provider; a request's `provider_key`, else the agent's, overrides it."},
	{"AGENTPLANE_PROVIDER_TIMEOUT", "`60s`", "Time limit of a provider's answer (of its first byte, when streamed)."},
	{"AGENTPLANE_EMBEDDING_URL", "unset (lexical ranking only)", "Base URL of an OpenAI-compatible embeddings endpoint (e.g. `https://api.openai.com/v1`); when set, retrieval fuses lexical and vector rankings."},
	{"AGENTPLANE_EMBEDDING_KEY", "unset", "API key of the embeddings endpoint."},
	{"AGENTPLANE_EMBEDDING_MODEL", "`text-embedding-3-small`", "Embedding model name."},
	{"AGENTPLANE_MEMORY_CACHE_MB", "`512`", "Memory each API process may hold for its retrieval index cache."},
	{"AGENTPLANE_CACHE_ENTRIES", "`10000`", "Entries each process keeps in each of its caches (API keys, projects, agents, deal stages, end users' memories, agents' memory version tokens, the workflows an event type triggers and their revisions, agents' own tools and their revisions, signing secrets; `0` turns the caches off). A change drops its entry on every process at once through NATS."},
	{"AGENTPLANE_CACHE_TTL", "`30s`", "How long a cached entry is kept at most: the longest a change (a revoked key, an updated or deleted agent, a source made ready or deleted, a workflow or a tool changed) may go unseen by another process while NATS is down. At most `5m`."},
	{"AGENTPLANE_SOURCE_STUCK_AFTER", "`15m`", "A source still `processing` this long gets a new generation, queued by the reconciler, unless its task is still queued, running or retrying (one whose task could not be queued is queued again after a minute)."},
	{"AGENTPLANE_RUN_WAIT", "`60s`", "How long a non-streamed agent run (`reasoning_mode: agent`) is waited for; after it the answer has `isComplete: false` and the run goes on."},
	{"AGENTPLANE_RUN_LEASE", "`30s`", "How long a worker holds an agent run or a workflow run without renewing its lease; another worker may take over a run whose lease expired."},
	{"AGENTPLANE_METRICS_ADDR", "unset (no listener)", "Address on which the `worker` and `scheduler` roles serve Prometheus metrics at `/metrics` and their probes at `/healthz` and `/readyz` (e.g. `:9090`); the `api` and `dev` roles serve all three on `AGENTPLANE_HTTP_ADDR`."},
	{"AGENTPLANE_QUEUE", "`agentplane`", "Name of the asynq queue the roles share: deployments (or tests) sharing one Redis keep apart by naming their own."},
	{"AGENTPLANE_WORKER_CONCURRENCY", "`10`", "Tasks a worker runs at once."},
	{"AGENTPLANE_WORKER_POLL", "`1s`", "How long an idle worker waits for the wake that an enqueued task publishes on Redis before it looks for tasks anyway: a task enqueued wakes the idle workers at once, and one whose wake was lost (a Redis connection lost meanwhile) waits at most this."},
	{"AGENTPLANE_RETENTION_DAYS", "`90`", "Days heartbeat firings, tool calls, agents' emails (received and sent; their threads' chats stay) and anonymous subscribers who never started a chat are kept (from when they fired, were called, were last seen); the scheduler deletes older ones every 10 minutes, in batches. Tool statistics (`/v1/bot/stats/tools`) reach back as far. `0` keeps them for ever."},
	{"AGENTPLANE_SHUTDOWN_TIMEOUT", "`30s`", "How long a stopping process waits for in-flight requests and tasks."},
	{"AGENTPLANE_LOG_LEVEL", "`info`", "`debug`, `info`, `warn` or `error`."},
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "unset (tracing off)", "Base URL of an OpenTelemetry collector's OTLP/HTTP receiver (e.g. `http://otel-collector:4318`); when set, every role sends its spans to its `/v1/traces`."},
	{"OTEL_TRACES_SAMPLER_ARG", "`1`", "Share (0 to 1) of new traces recorded; a request that arrives with a `traceparent` follows its caller's decision."},
}

// Config is the whole configuration of one process.
type Config struct {
	Role          string
	HTTPAddr      string
	DataDir       string
	MongoURI      string
	MongoDatabase string
	DevMongoAddr  string
	// DevMongoAddrGiven reports whether AGENTPLANE_DEV_MONGO_ADDR was set: only the default
	// address gives way to a free port when it is taken.
	DevMongoAddrGiven bool
	RedisURL          string
	NATSURL           string
	AdminToken        string
	// PublicDomain is the domain whose subdomains are agents' pages ("" for none).
	PublicDomain string
	// PublicURL is the API's public URL ("": the one each request came to).
	PublicURL string
	// MailDomain is the domain of agents' email addresses.
	MailDomain string
	// SMTPAddr is the listen address of the SMTP listener ("": off, but in dev).
	SMTPAddr string
	// SMTPRelay is the URL of the relay answers go out through ("": none, answers kept unsent).
	SMTPRelay string
	// PublicHosts are the deployment's own host names, which no agent may take.
	PublicHosts []string
	// DNSResolver is the host:port of the DNS server domain verification asks ("" for the
	// system's resolver).
	DNSResolver string
	DevAPIKey   string
	// SecretsKey seals tools' credentials; nil when none is configured.
	SecretsKey      []byte
	DefaultCurrency string
	MaxBodyBytes    int64
	BodyTimeout     time.Duration
	RateLimit       int
	AccountBudget   int
	// PublicRateLimit is requests per minute per client address to /public/*, and
	// PublicAgentRateLimit per agent (0: no limit).
	PublicRateLimit      int
	PublicAgentRateLimit int
	// TrustedProxies are the CIDRs whose X-Forwarded-For names the client address.
	TrustedProxies    []string
	WorkerConcurrency int
	AllowPrivate      bool
	FetchTimeout      time.Duration
	FetchMaxBytes     int64
	CrawlMaxPages     int
	ProviderURL       string
	ProviderKey       string
	ProviderTimeout   time.Duration
	EmbeddingURL      string
	EmbeddingKey      string
	EmbeddingModel    string
	MemoryCacheBytes  int64
	// CacheEntries bounds each cache of keys, projects and agents (0: no caching).
	CacheEntries int
	// CacheTTL is how long a cached entry is kept at most.
	CacheTTL         time.Duration
	SourceStuckAfter time.Duration
	RunWait          time.Duration
	RunLease         time.Duration
	WorkerPoll       time.Duration
	ShutdownTimeout  time.Duration
	LogLevel         string
	Queue            string
	MetricsAddr      string
	// Retention is how long heartbeat firings, tool calls and idle anonymous subscribers are
	// kept (0: for ever).
	Retention time.Duration
	// TraceEndpoint is the OTLP/HTTP base URL spans go to; empty turns tracing off.
	TraceEndpoint string
	// TraceRatio is the share of new traces recorded.
	TraceRatio float64
}

// Embedded reports whether dev should start an embedded store in place of an unset URL.
func (c Config) Embedded() bool { return c.Role == "dev" }

// Load reads the configuration for role from getenv.
func Load(role string, getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		Role:            role,
		HTTPAddr:        get("AGENTPLANE_HTTP_ADDR", ":8080"),
		DataDir:         get("AGENTPLANE_DATA_DIR", "./data"),
		MongoURI:        get("AGENTPLANE_MONGO_URI", "mongodb://127.0.0.1:27017"),
		MongoDatabase:   get("AGENTPLANE_MONGO_DATABASE", "agentplane"),
		DevMongoAddr:    get("AGENTPLANE_DEV_MONGO_ADDR", "127.0.0.1:27018"),
		RedisURL:        get("AGENTPLANE_REDIS_URL", "redis://127.0.0.1:6379/0"),
		NATSURL:         get("AGENTPLANE_NATS_URL", "nats://127.0.0.1:4222"),
		AdminToken:      get("AGENTPLANE_ADMIN_TOKEN", ""),
		PublicDomain:    strings.Trim(strings.ToLower(get("AGENTPLANE_PUBLIC_DOMAIN", "")), "."),
		DNSResolver:     get("AGENTPLANE_DNS_RESOLVER", ""),
		PublicURL:       strings.TrimRight(get("AGENTPLANE_PUBLIC_URL", ""), "/"),
		MailDomain:      strings.Trim(strings.ToLower(get("AGENTPLANE_MAIL_DOMAIN", "localhost")), "."),
		SMTPAddr:        get("AGENTPLANE_SMTP_ADDR", ""),
		SMTPRelay:       get("AGENTPLANE_SMTP_RELAY", ""),
		DevAPIKey:       get("AGENTPLANE_DEV_API_KEY", ""),
		LogLevel:        get("AGENTPLANE_LOG_LEVEL", "info"),
		Queue:           get("AGENTPLANE_QUEUE", "agentplane"),
		MetricsAddr:     get("AGENTPLANE_METRICS_ADDR", ""),
		DefaultCurrency: strings.ToUpper(get("AGENTPLANE_DEFAULT_CURRENCY", "USD")),
		ProviderURL:     get("AGENTPLANE_PROVIDER_URL", ""),
		ProviderKey:     get("AGENTPLANE_PROVIDER_KEY", ""),
		EmbeddingURL:    get("AGENTPLANE_EMBEDDING_URL", ""),
		EmbeddingKey:    get("AGENTPLANE_EMBEDDING_KEY", ""),
		EmbeddingModel:  get("AGENTPLANE_EMBEDDING_MODEL", "text-embedding-3-small"),
		TraceEndpoint:   get("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
	}
	for _, h := range strings.Split(get("AGENTPLANE_PUBLIC_HOSTS", ""), ",") {
		if h = strings.Trim(strings.ToLower(strings.TrimSpace(h)), "."); h != "" {
			c.PublicHosts = append(c.PublicHosts, h)
		}
	}
	if u, err := url.Parse(c.PublicURL); c.PublicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return c, fmt.Errorf("AGENTPLANE_PUBLIC_URL: want an http or https URL such as https://api.example.com, got %q", c.PublicURL)
	}
	if c.SMTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.SMTPAddr); err != nil {
			return c, fmt.Errorf("AGENTPLANE_SMTP_ADDR: want host:port such as :2525, got %q", c.SMTPAddr)
		}
	}
	if u, err := url.Parse(c.SMTPRelay); c.SMTPRelay != "" && (err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "") {
		// The URL is not repeated: it may hold a password.
		return c, fmt.Errorf("AGENTPLANE_SMTP_RELAY: want smtp://user:password@host:port or smtps://..., got a value of another form")
	}
	if c.DNSResolver != "" {
		if _, _, err := net.SplitHostPort(c.DNSResolver); err != nil {
			return c, fmt.Errorf("AGENTPLANE_DNS_RESOLVER: want host:port such as 127.0.0.1:53, got %q", c.DNSResolver)
		}
	}
	c.DevMongoAddrGiven = strings.TrimSpace(getenv("AGENTPLANE_DEV_MONGO_ADDR")) != ""
	if role == "dev" {
		c.HTTPAddr = get("AGENTPLANE_HTTP_ADDR", "127.0.0.1:8080")
		c.MongoURI = get("AGENTPLANE_MONGO_URI", "")
		c.RedisURL = get("AGENTPLANE_REDIS_URL", "")
		c.NATSURL = get("AGENTPLANE_NATS_URL", "")
	}
	var err error
	if c.MaxBodyBytes, err = positiveInt(get("AGENTPLANE_MAX_BODY_BYTES", "1048576"), "AGENTPLANE_MAX_BODY_BYTES", 1); err != nil {
		return c, err
	}
	rate, err := positiveInt(get("AGENTPLANE_RATE_LIMIT", "600"), "AGENTPLANE_RATE_LIMIT", 0)
	if err != nil {
		return c, err
	}
	c.RateLimit = int(rate)
	budget, err := positiveInt(get("AGENTPLANE_ACCOUNT_CONCURRENCY", "32"), "AGENTPLANE_ACCOUNT_CONCURRENCY", 0)
	if err != nil {
		return c, err
	}
	c.AccountBudget = int(budget)
	for _, l := range []struct {
		dst       *int
		name, def string
	}{{&c.PublicRateLimit, "AGENTPLANE_PUBLIC_RATE_LIMIT", "120"}, {&c.PublicAgentRateLimit, "AGENTPLANE_PUBLIC_AGENT_RATE_LIMIT", "3000"}} {
		n, err := positiveInt(get(l.name, l.def), l.name, 0)
		if err != nil {
			return c, err
		}
		*l.dst = int(n)
	}
	if c.TrustedProxies, err = proxies(get("AGENTPLANE_TRUSTED_PROXIES", "127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7")); err != nil {
		return c, err
	}
	conc, err := positiveInt(get("AGENTPLANE_WORKER_CONCURRENCY", "10"), "AGENTPLANE_WORKER_CONCURRENCY", 1)
	if err != nil {
		return c, err
	}
	c.WorkerConcurrency = int(conc)
	for _, d := range []struct {
		dst       *time.Duration
		name, def string
	}{
		{&c.ShutdownTimeout, "AGENTPLANE_SHUTDOWN_TIMEOUT", "30s"},
		{&c.BodyTimeout, "AGENTPLANE_BODY_TIMEOUT", "30s"},
		{&c.FetchTimeout, "AGENTPLANE_FETCH_TIMEOUT", "20s"},
		{&c.ProviderTimeout, "AGENTPLANE_PROVIDER_TIMEOUT", "60s"},
		{&c.SourceStuckAfter, "AGENTPLANE_SOURCE_STUCK_AFTER", "15m"},
		{&c.RunWait, "AGENTPLANE_RUN_WAIT", "60s"},
		{&c.RunLease, "AGENTPLANE_RUN_LEASE", "30s"},
		{&c.WorkerPoll, "AGENTPLANE_WORKER_POLL", "1s"},
		{&c.CacheTTL, "AGENTPLANE_CACHE_TTL", "30s"},
	} {
		if *d.dst, err = time.ParseDuration(get(d.name, d.def)); err != nil || *d.dst <= 0 {
			return c, fmt.Errorf("%s: want a positive duration such as %s", d.name, d.def)
		}
	}
	if c.FetchMaxBytes, err = positiveInt(get("AGENTPLANE_FETCH_MAX_BYTES", "10485760"), "AGENTPLANE_FETCH_MAX_BYTES", 1024); err != nil {
		return c, err
	}
	pages, err := positiveInt(get("AGENTPLANE_CRAWL_MAX_PAGES", "20"), "AGENTPLANE_CRAWL_MAX_PAGES", 1)
	if err != nil {
		return c, err
	}
	c.CrawlMaxPages = int(pages)
	cacheMB, err := positiveInt(get("AGENTPLANE_MEMORY_CACHE_MB", "512"), "AGENTPLANE_MEMORY_CACHE_MB", 1)
	if err != nil {
		return c, err
	}
	c.MemoryCacheBytes = cacheMB << 20
	if c.CacheTTL > 5*time.Minute {
		return c, fmt.Errorf("AGENTPLANE_CACHE_TTL: want at most 5m (it bounds how long a revoked key may still work while NATS is down)")
	}
	days, err := positiveInt(get("AGENTPLANE_RETENTION_DAYS", "90"), "AGENTPLANE_RETENTION_DAYS", 0)
	if err != nil {
		return c, err
	}
	c.Retention = time.Duration(days) * 24 * time.Hour
	entries, err := positiveInt(get("AGENTPLANE_CACHE_ENTRIES", "10000"), "AGENTPLANE_CACHE_ENTRIES", 0)
	if err != nil {
		return c, err
	}
	c.CacheEntries = int(entries)
	if c.AllowPrivate, err = strconv.ParseBool(get("AGENTPLANE_ALLOW_PRIVATE_NETWORKS", "false")); err != nil {
		return c, fmt.Errorf("AGENTPLANE_ALLOW_PRIVATE_NETWORKS: want true or false")
	}
	if v := get("AGENTPLANE_SECRETS_KEY", ""); v != "" {
		if c.SecretsKey, err = secrets.ParseKey(v); err != nil {
			return c, fmt.Errorf("AGENTPLANE_SECRETS_KEY: %v (make one with: openssl rand -base64 32)", err)
		}
	}
	if len(c.DefaultCurrency) != 3 {
		return c, fmt.Errorf("AGENTPLANE_DEFAULT_CURRENCY: want a 3-letter ISO 4217 code, got %q", c.DefaultCurrency)
	}
	if c.TraceEndpoint != "" {
		if u, err := url.Parse(c.TraceEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: want an http or https URL such as http://otel-collector:4318, got %q", c.TraceEndpoint)
		}
	}
	if c.TraceRatio, err = strconv.ParseFloat(get("OTEL_TRACES_SAMPLER_ARG", "1"), 64); err != nil || !(c.TraceRatio >= 0 && c.TraceRatio <= 1) {
		return c, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG: want a number from 0 to 1")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("AGENTPLANE_LOG_LEVEL: want debug, info, warn or error, got %q", c.LogLevel)
	}
	return c, nil
}

// proxies reads AGENTPLANE_TRUSTED_PROXIES: CIDRs, comma-separated, or none.
func proxies(s string) ([]string, error) {
	if s == "none" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if _, _, err := net.ParseCIDR(p); err != nil {
			return nil, fmt.Errorf("AGENTPLANE_TRUSTED_PROXIES: want CIDRs such as 10.0.0.0/8, comma-separated, or none; got %q", p)
		}
		out = append(out, p)
	}
	return out, nil
}

func positiveInt(s, name string, min int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min {
		return 0, fmt.Errorf("%s: want an integer >= %d, got %q", name, min, s)
	}
	return n, nil
}
