package subscribers

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
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
	now func() time.Time
}

// NewService returns the service over repo, signing sessions with key (nil: none are issued).
func NewService(repo Repo, key []byte) *Service {
	return &Service{repo: repo, key: key, now: time.Now}
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
}

func (s *Service) ready() error {
	if s.key == nil {
		return apperr.New(apperr.Unavailable, "sessions_unavailable", "End-user sessions need AGENTPLANE_SECRETS_KEY on the server.")
	}
	return nil
}

// Open starts a session with bot for an anonymous end user: the subscriber id the browser kept,
// when it is one of bot's, else a new subscriber.
func (s *Service) Open(ctx context.Context, bot agents.Bot, kept string) (Session, error) {
	if err := s.ready(); err != nil {
		return Session{}, err
	}
	now := s.now()
	sub, err := s.repo.Get(ctx, bot.ID, strings.TrimSpace(kept))
	switch {
	case err == nil:
		if err := s.repo.Seen(ctx, bot.ID, sub.ID, now); err != nil {
			return Session{}, err
		}
	case apperr.As(err).Kind == apperr.NotFound || strings.TrimSpace(kept) == "":
		sub = Subscriber{ID: ids.New(), ProjectID: bot.ProjectID, BotID: bot.ID, Name: "Visitor", Anonymous: true, FirstSeen: now, LastSeen: now}
		if err := s.repo.Insert(ctx, sub); err != nil {
			return Session{}, err
		}
	default:
		return Session{}, err
	}
	expires := now.Add(SessionTTL)
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: issuer, Subject: sub.ID,
		Audience: jwt.ClaimStrings{bot.ID}, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(expires)}).SignedString(s.key)
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
	var c jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithIssuer(issuer), jwt.WithTimeFunc(s.now), jwt.WithExpirationRequired())
	if err != nil || len(c.Audience) != 1 || c.Subject == "" {
		msg := "The session is not valid; open a new one."
		if errors.Is(err, jwt.ErrTokenExpired) {
			msg = "The session has expired; open a new one."
		}
		return Claims{}, apperr.New(apperr.Unauthorized, "invalid_session", msg)
	}
	return Claims{BotID: c.Audience[0], SubscriberID: c.Subject}, nil
}

// Get returns the agent's subscriber id.
func (s *Service) Get(ctx context.Context, botID, id string) (Subscriber, error) {
	return s.repo.Get(ctx, botID, id)
}

// ChatStarted counts a chat the subscriber started.
func (s *Service) ChatStarted(ctx context.Context, botID, id string) error {
	return s.repo.CountChat(ctx, botID, id)
}

// List returns a page of the project's subscribers (of one agent when botID is not empty), the
// most recently seen first.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Subscriber, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}
