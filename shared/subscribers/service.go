package subscribers

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/kit/secrets"
	"github.com/agentplane/agentplane/shared/limits"
)

// SessionTTL is how long an end user's session lasts; the page asks for a new one before.
const SessionTTL = time.Hour

// issuer marks the tokens this service signs.
const issuer = "agentplane/session"

// Service opens and checks end users' sessions.
type Service struct {
	repo Repo
	// key signs sessions; nil when the deployment has no secrets key (sessions are refused).
	key []byte
	// box seals agents' SSO secrets.
	box secrets.Box
	now func() time.Time
}

// NewService returns the service over repo, signing sessions with key (nil: none are issued)
// and sealing agents' SSO secrets with box.
func NewService(repo Repo, key []byte, box secrets.Box) *Service {
	return &Service{repo: repo, key: key, box: box, now: time.Now}
}

// MaxSSOAhead bounds how far ahead an SSO token's expiry may be.
const MaxSSOAhead = time.Hour

// ssoClaims are what an agent's customer signs about its user.
type ssoClaims struct {
	Email      string `json:"email"`
	Name       string `json:"name"`
	ExternalID string `json:"external_id"`
	jwt.RegisteredClaims
}

// Session is an end user's session: a token for one agent.
type Session struct {
	Token        string    `json:"token"`
	SubscriberID string    `json:"subscriber_id"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// Claims is who a session token speaks for.
type Claims struct {
	BotID        string
	SubscriberID string
	// Name is the end user's name when the session was opened.
	Name string
	// SignedIn says an SSO token signed the end user in; else the session is anonymous.
	SignedIn bool
}

// sessionClaims are what a session token says: the registered claims, and the end user's name,
// which their messages carry (so that a turn need not read the end user), and whether they
// signed in.
type sessionClaims struct {
	jwt.RegisteredClaims
	Name string `json:"name,omitempty"`
	SSO  bool   `json:"sso,omitempty"`
}

// Bounds of a sign-in token and of what it says about its user.
const (
	MaxSSOTokenLength = 8192
	MaxSSONameLength  = 200
	MaxSSOEmailLength = 254
	MaxSSOExternalID  = 200
)

func (s *Service) ready() error {
	if s.key == nil {
		return apperr.New(apperr.Unavailable, "sessions_unavailable", "End-user sessions need AGENTPLANE_SECRETS_KEY on the server.")
	}
	return nil
}

// Open starts a session with bot: for the user an SSO token signs, when there is one; else,
// unless the agent requires sign-in, for an anonymous end user: the subscriber id the browser
// kept, when it is one of bot's anonymous ones, else a new id. A kept id that signed in needs
// its SSO token again (Unauthorized sso_required). A new id is no record yet: the subscriber is
// kept once they write (ChatStarted).
func (s *Service) Open(ctx context.Context, bot agents.Bot, kept, ssoToken string) (Session, error) {
	if err := s.ready(); err != nil {
		return Session{}, err
	}
	if strings.TrimSpace(ssoToken) != "" {
		return s.signIn(ctx, bot, strings.TrimSpace(ssoToken))
	}
	if bot.RequireLogin == 1 {
		return Session{}, apperr.New(apperr.Unauthorized, "login_required", "This agent requires sign-in: open it from the site that signs you in.")
	}
	now := s.now()
	kept = strings.TrimSpace(kept)
	if kept == "" {
		return s.session(bot, newVisitor(bot), false, now)
	}
	sub, err := s.repo.Get(ctx, bot.ID, kept)
	switch {
	case err == nil && !sub.Anonymous:
		return Session{}, apperr.New(apperr.Unauthorized, "sso_required", "This visitor signed in before: sign in again with an sso_token, or open an anonymous session without their subscriber_id.")
	case err == nil:
		if err := s.repo.Seen(ctx, bot.ID, sub.ID, now); err != nil {
			return Session{}, err
		}
	case apperr.As(err).Kind == apperr.NotFound:
		sub = newVisitor(bot)
	default:
		return Session{}, err
	}
	return s.session(bot, sub, false, now)
}

// newVisitor is a new anonymous end user of bot, as their first message keeps them.
func newVisitor(bot agents.Bot) Subscriber {
	return Subscriber{ID: ids.New(), ProjectID: bot.ProjectID, BotID: bot.ID, Name: "Visitor", Anonymous: true}
}

// session is a session for sub with bot, from now; signedIn says an SSO token signed them in.
func (s *Service) session(bot agents.Bot, sub Subscriber, signedIn bool, now time.Time) (Session, error) {
	expires := now.Add(SessionTTL)
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, sessionClaims{Name: sub.Name, SSO: signedIn, RegisteredClaims: jwt.RegisteredClaims{Issuer: issuer,
		Subject: sub.ID, Audience: jwt.ClaimStrings{bot.ID}, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(expires)}}).SignedString(s.key)
	if err != nil {
		return Session{}, err
	}
	return Session{Token: token, SubscriberID: sub.ID, ExpiresAt: expires}, nil
}

// Verify checks a session token: signed here, not expired, for an agent.
func (s *Service) Verify(token string) (Claims, error) {
	if err := s.ready(); err != nil {
		return Claims{}, err
	}
	var c sessionClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithIssuer(issuer), jwt.WithTimeFunc(s.now), jwt.WithExpirationRequired())
	if err != nil || len(c.Audience) != 1 || c.Subject == "" {
		msg := "The session is not valid; open a new one."
		if errors.Is(err, jwt.ErrTokenExpired) {
			msg = "The session has expired; open a new one."
		}
		return Claims{}, apperr.New(apperr.Unauthorized, "invalid_session", msg)
	}
	return Claims{BotID: c.Audience[0], SubscriberID: c.Subject, Name: c.Name, SignedIn: c.SSO}, nil
}

// Get returns the agent's subscriber id.
func (s *Service) Get(ctx context.Context, botID, id string) (Subscriber, error) {
	return s.repo.Get(ctx, botID, id)
}

// ChatStarted counts a chat sub started, keeping sub first when this is the first they wrote.
func (s *Service) ChatStarted(ctx context.Context, sub Subscriber) error {
	now := s.now()
	sub.FirstSeen, sub.LastSeen = now, now
	return s.repo.CountChat(ctx, sub)
}

// List returns a page of the project's subscribers (of one agent when botID is not empty), the
// most recently seen first.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Subscriber, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// NewSSOSecret makes the agent a new SSO secret, which signs its customer's tokens (HS256), and
// returns it: this once, for it is kept sealed. An earlier secret stops working.
func (s *Service) NewSSOSecret(ctx context.Context, bot agents.Bot) (string, error) {
	if !s.box.Ready() {
		return "", apperr.New(apperr.Unavailable, "secrets_key_missing", "SSO secrets need AGENTPLANE_SECRETS_KEY on the server.")
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	secret := "sso_" + hex.EncodeToString(raw)
	sealed, err := s.box.Seal([]byte(secret), ssoOwner(bot.ID))
	if err != nil {
		return "", err
	}
	return secret, s.repo.SetSSOSecret(ctx, bot.ID, sealed)
}

func ssoOwner(botID string) string { return "sso:" + botID }

// signIn opens a session for the user an SSO token of the agent's customer signs: HS256 with
// the agent's SSO secret, an expiry at most MaxSSOAhead ahead, and external_id (or email) saying
// who. The user is the agent's subscriber of that external id, made on first sign-in.
func (s *Service) signIn(ctx context.Context, bot agents.Bot, token string) (Session, error) {
	refused := func(msg string) error { return apperr.New(apperr.Unauthorized, "invalid_sso_token", msg) }
	if len(token) > MaxSSOTokenLength {
		return Session{}, apperr.Invalidf("sso_token", "must be at most %d characters", MaxSSOTokenLength)
	}
	sealed, err := s.repo.SSOSecret(ctx, bot.ID)
	if apperr.As(err).Kind == apperr.NotFound {
		return Session{}, refused("The agent has no SSO secret; make one with POST /v1/bot/sso-secret.")
	}
	if err != nil {
		return Session{}, err
	}
	secret, err := s.box.Open(sealed, ssoOwner(bot.ID))
	if err != nil {
		return Session{}, err
	}
	now := s.now()
	var c ssoClaims
	_, err = jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithExpirationRequired())
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Session{}, refused("The sign-in token has expired.")
	case err != nil:
		return Session{}, refused("The sign-in token is not valid: it must be signed (HS256) with the agent's SSO secret.")
	case c.ExpiresAt.After(now.Add(MaxSSOAhead + time.Minute)):
		return Session{}, refused("The sign-in token's exp may be at most an hour ahead.")
	case c.IssuedAt != nil && c.IssuedAt.After(now.Add(MaxSSOAhead)):
		return Session{}, refused("The sign-in token's iat is more than an hour ahead.")
	}
	if err := c.bounded(); err != nil {
		return Session{}, err
	}
	external := strings.TrimSpace(c.ExternalID)
	if external == "" {
		external = strings.ToLower(strings.TrimSpace(c.Email))
	}
	if external == "" {
		return Session{}, refused("The sign-in token must say who signs in: external_id or email.")
	}
	sub, err := s.repo.ByExternalID(ctx, bot.ID, external)
	switch {
	case err == nil:
		sub.Name, sub.Email = orKept(c.Name, sub.Name), orKept(c.Email, sub.Email)
		if err := s.repo.SignedIn(ctx, bot.ID, sub.ID, sub.Name, sub.Email, now); err != nil {
			return Session{}, err
		}
	case apperr.As(err).Kind == apperr.NotFound:
		sub = Subscriber{ID: ids.New(), ProjectID: bot.ProjectID, BotID: bot.ID, Name: orKept(c.Name, "User"), Email: strings.TrimSpace(c.Email),
			ExternalID: external, FirstSeen: now, LastSeen: now}
		if err := s.repo.Insert(ctx, sub); err != nil {
			return Session{}, err
		}
	default:
		return Session{}, err
	}
	return s.session(bot, sub, true, now)
}

// bounded refuses claims longer than their bounds (Invalid, naming the claim).
func (c ssoClaims) bounded() error {
	var p apperr.Problems
	limits.Text(&p, "sso_token.name", c.Name, MaxSSONameLength)
	limits.Text(&p, "sso_token.email", c.Email, MaxSSOEmailLength)
	limits.Text(&p, "sso_token.external_id", c.ExternalID, MaxSSOExternalID)
	return p.Err()
}

// orKept is v, or kept when v is empty.
func orKept(v, kept string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return kept
}

// OfPlatform returns bot's subscriber known on a messaging platform as externalID (the
// platform's type and user id), keeping them first, named name, when they are new. Their id is
// derived from the agent and externalID, so they are read by it, and two first messages at
// once keep one subscriber.
func (s *Service) OfPlatform(ctx context.Context, bot agents.Bot, externalID, name string) (Subscriber, error) {
	sum := sha256.Sum256([]byte(bot.ID + "\x00" + externalID))
	id := "p_" + hex.EncodeToString(sum[:16])
	sub, err := s.repo.Get(ctx, bot.ID, id)
	if err == nil || apperr.As(err).Kind != apperr.NotFound {
		return sub, err
	}
	now := s.now()
	sub = Subscriber{ID: id, ProjectID: bot.ProjectID, BotID: bot.ID, ExternalID: externalID,
		Name: cmp.Or(strings.TrimSpace(name), "Guest"), FirstSeen: now, LastSeen: now}
	if utf8.RuneCountInString(sub.Name) > MaxSSONameLength {
		sub.Name = string([]rune(sub.Name)[:MaxSSONameLength])
	}
	err = s.repo.Insert(ctx, sub)
	if apperr.As(err).Kind == apperr.Conflict {
		return s.repo.Get(ctx, bot.ID, sub.ID)
	}
	return sub, err
}
