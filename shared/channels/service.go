package channels

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/kit/secrets"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/subscribers"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Bounds of what a connection holds.
const (
	MaxName         = 200
	MaxCredential   = 4096
	MaxCredentials  = 8
	MaxInboundText  = chats.MaxMessageLength
	maxErrorInState = 500
)

// Agents are the agents whose connections these are.
type Agents interface {
	Get(ctx context.Context, projectID, idOrUUID string) (agents.Bot, error)
	Find(ctx context.Context, idOrUUID string) (agents.Bot, error)
}

// Services are the domain services a channel's messages are answered through.
type Services struct {
	Agents      Agents
	Chats       *chats.Service
	Runs        *agentruns.Service
	Subscribers *subscribers.Service
	// Limit takes one message of the agent's rate limit for the sender key (the end user's own,
	// whichever door they write by).
	Limit func(ctx context.Context, bot agents.Bot, key string) error
	// Counted counts a message of a platform type by outcome (CountReceived, CountSent,
	// CountRetried, CountFailed).
	Counted func(typ, outcome string)
}

// The outcomes Counted counts.
const (
	CountReceived = "received"
	CountSent     = "sent"
	CountRetried  = "retried"
	CountFailed   = "failed"
)

// Service manages agents' channel connections, takes their platforms' webhook calls and
// answers the messages they bring.
type Service struct {
	repo      Repo
	platforms map[string]Platform
	box       secrets.Box
	events    *outbox.Dispatcher
	queue     tasks.Queue
	svc       Services
	now       func() time.Time
}

// NewService returns the service over repo, reaching each type's platform through platforms,
// sealing credentials with box.
func NewService(repo Repo, platforms map[string]Platform, box secrets.Box, events *outbox.Dispatcher, queue tasks.Queue, svc Services) *Service {
	return &Service{repo: repo, platforms: platforms, box: box, events: events, queue: queue, svc: svc,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// WithURL returns c with the URL of its webhook under base, the deployment's public URL.
func WithURL(c Connection, base string) Connection {
	c.WebhookURL = strings.TrimRight(base, "/") + HookPath(c.Type, c.ID)
	return c
}

// Create connects the project's agent bot to a platform: the credentials are checked with the
// platform (and its webhook or command registered there when it has one to register) before
// the connection is kept. base is the deployment's public URL.
func (s *Service) Create(ctx context.Context, projectID string, bot agents.Bot, in Input, base string) (Connection, error) {
	now := s.now()
	c := Connection{ID: ids.New(), ProjectID: projectID, BotID: bot.ID, Status: StatusActive, CreatedAt: now, UpdatedAt: now}
	creds, err := s.apply(&c, in, nil, true)
	if err != nil {
		return Connection{}, err
	}
	c = WithURL(c, base)
	if err := s.connect(ctx, c, creds); err != nil {
		return Connection{}, err
	}
	if err := s.repo.Insert(ctx, c); err != nil {
		return Connection{}, err
	}
	return c, nil
}

// Update changes the connection: the credentials given replace the ones of the same names,
// and any change of the credentials or the API's URL is checked with the platform again.
func (s *Service) Update(ctx context.Context, projectID, botID, id string, in Input, base string) (Connection, error) {
	c, err := s.repo.Get(ctx, projectID, botID, id)
	if err != nil {
		return Connection{}, err
	}
	kept, err := s.open(c)
	if err != nil && len(in.Credentials) == 0 {
		return Connection{}, err
	}
	before := c.APIBaseURL
	creds, err := s.apply(&c, in, kept, false)
	if err != nil {
		return Connection{}, err
	}
	c = WithURL(c, base)
	if len(in.Credentials) > 0 || c.APIBaseURL != before {
		if err := s.connect(ctx, c, creds); err != nil {
			return Connection{}, err
		}
	}
	c.UpdatedAt = s.now()
	if err := s.repo.Replace(ctx, c); err != nil {
		return Connection{}, err
	}
	return c, nil
}

// Get returns the project's agent's connection id.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Connection, error) {
	return s.repo.Get(ctx, projectID, botID, id)
}

// List returns a page of the agent's connections.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Connection, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// Delete removes the connection: its webhook answers 404 from then on.
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	return s.repo.Delete(ctx, projectID, botID, id)
}

// apply checks in and sets it on c, merged over the credentials kept; create says c is new
// (its type and credentials are required). It returns the connection's credentials.
func (s *Service) apply(c *Connection, in Input, kept Credentials, create bool) (Credentials, error) {
	var p apperr.Problems
	if in.Type != nil {
		typ := strings.ToLower(strings.TrimSpace(*in.Type))
		switch {
		case !create && typ != c.Type:
			p.Add("type", "cannot change; delete the connection and create one of the other type")
		case !slices.Contains(Types, typ) || s.platforms[typ] == nil:
			p.Add("type", "must be one of %s", strings.Join(Types, ", "))
		default:
			c.Type = typ
		}
	} else if create {
		p.Add("type", "is required: one of %s", strings.Join(Types, ", "))
	}
	if in.Name != nil {
		c.Name = strings.TrimSpace(*in.Name)
	}
	if c.Name == "" && create {
		c.Name = c.Type
	}
	if utf8.RuneCountInString(c.Name) > MaxName {
		p.Add("name", "must be at most %d characters", MaxName)
	}
	if in.APIBaseURL != nil {
		raw := strings.TrimRight(strings.TrimSpace(*in.APIBaseURL), "/")
		if u, err := url.Parse(raw); raw != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil) {
			p.Add("api_base_url", "must be an http or https URL without credentials, or empty for the platform's own")
		}
		c.APIBaseURL = raw
	}
	if in.Status != nil {
		switch st := strings.TrimSpace(*in.Status); st {
		case StatusActive, StatusPaused:
			c.Status, c.LastError, c.LastErrorAt = st, "", nil
		default:
			p.Add("status", "must be active or paused")
		}
	}
	creds := maps.Clone(kept)
	if creds == nil {
		creds = Credentials{}
	}
	if len(in.Credentials) > MaxCredentials {
		p.Add("credentials", "must have at most %d entries", MaxCredentials)
	}
	platform := s.platforms[c.Type]
	for name, v := range in.Credentials {
		v = strings.TrimSpace(v)
		switch {
		case platform != nil && !slices.Contains(platform.Required(), name):
			p.Add("credentials."+name, "is not a credential of %s connections (they take %s)", c.Type, strings.Join(platform.Required(), ", "))
		case len(v) > MaxCredential:
			p.Add("credentials."+name, "must be at most %d bytes", MaxCredential)
		case strings.ContainsAny(v, "\r\n"):
			p.Add("credentials."+name, "must not contain line breaks")
		default:
			creds[name] = v
		}
	}
	if c.Type == TypeTelegram && creds["secret_token"] == "" {
		creds["secret_token"] = newSecretToken()
	}
	if platform != nil {
		for _, name := range platform.Required() {
			if creds[name] == "" {
				p.Add("credentials."+name, "is required for %s connections", c.Type)
			}
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if !s.box.Ready() {
		return nil, apperr.New(apperr.Unavailable, "secrets_key_missing",
			"This deployment has no key to store credentials with (AGENTPLANE_SECRETS_KEY); ask its operator to set one.")
	}
	plain, _ := json.Marshal(creds)
	sealed, err := s.box.Seal(plain, c.ID)
	if err != nil {
		return nil, err
	}
	c.Sealed = sealed
	c.Credentials = slices.Sorted(maps.Keys(creds))
	return creds, nil
}

// newSecretToken is a secret for Telegram to send with each update (1-256 of A-Z, a-z, 0-9,
// _ and -).
func newSecretToken() string {
	raw := make([]byte, 24)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}

// open returns the connection's credentials.
func (s *Service) open(c Connection) (Credentials, error) {
	plain, err := s.box.Open(c.Sealed, c.ID)
	if err != nil {
		return nil, apperr.New(apperr.Unavailable, "secrets_unreadable",
			"The connection's credentials cannot be read with this deployment's key (AGENTPLANE_SECRETS_KEY changed?); give them again with an update.")
	}
	var creds Credentials
	return creds, json.Unmarshal(plain, &creds)
}

// link is what the platform needs of c.
func link(c Connection, creds Credentials) Link {
	return Link{ID: c.ID, APIBaseURL: c.APIBaseURL, Credentials: creds, WebhookURL: c.WebhookURL}
}

// connect checks c's credentials with its platform and sets the platform up: a refusal is the
// user's to fix (422 channel_connect_failed), an outage a 502.
func (s *Service) connect(ctx context.Context, c Connection, creds Credentials) error {
	err := s.platforms[c.Type].Connect(ctx, link(c, creds))
	if err == nil {
		return nil
	}
	if _, later := IsRetryLater(err); later {
		return apperr.New(apperr.BadGateway, "channel_unreachable", "The "+c.Type+" API did not answer well; try again: "+bounded(err.Error()))
	}
	if e := apperr.As(err); e.Kind != apperr.Internal {
		return err
	}
	return apperr.New(apperr.Invalid, "channel_connect_failed", "The "+c.Type+" API refused the connection: "+bounded(err.Error()))
}

// bounded is an error's text as a connection's status keeps it.
func bounded(msg string) string {
	if utf8.RuneCountInString(msg) <= maxErrorInState {
		return msg
	}
	return string([]rune(msg)[:maxErrorInState]) + "…"
}

// failed records that the connection failed with err: its status is error until it is
// updated.
func (s *Service) failed(ctx context.Context, c Connection, err error) error {
	return s.repo.SetStatus(ctx, c.ID, StatusError, bounded(err.Error()), s.now())
}
