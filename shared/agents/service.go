package agents

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// botEvents are the events of agents: their data is the agent as users see it (Bot.Public).
var botEvents = outbox.Declare[Bot](outbox.BotCreated, outbox.BotUpdated, outbox.BotDeleted)

// Resource names agents in outbox references.
const Resource = "bot"

// Service holds the agent rules; persistence is its Repo's, events go through the dispatcher.
type Service struct {
	repo   Repo
	events *outbox.Dispatcher
	now    func() time.Time
	writes keylock.Locks // agent updates of this process, one at a time per agent
}

// NewService returns the agent service.
func NewService(repo Repo, events *outbox.Dispatcher) *Service {
	return &Service{repo: repo, events: events, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Create creates an agent in projectID. Status defaults to active.
func (s *Service) Create(ctx context.Context, projectID string, c Create) (Bot, error) {
	now := s.now()
	name := strings.TrimSpace(c.Name)
	b := Bot{
		ID:             ids.ObjectID(),
		UUID:           ids.New(),
		ProjectID:      projectID,
		Subdomain:      newSubdomain(name),
		Name:           name,
		Model:          strings.TrimSpace(c.Model),
		Instruction:    strings.TrimSpace(c.Instruction),
		ReasoningType:  "auto",
		MaxReplyTokens: strconv.Itoa(DefaultReplyTokens),
		Top:            DefaultTop,
		Memory:         1,
		Status:         StatusActive,
		ActiveAt:       now,
		UpdatedAt:      now,
		CreatedAt:      now,
		Branding:       defaultBranding(name),
		Integrations:   []freeform.Object{},
	}
	if c.Status.Set {
		b.Status = int(c.Status.Value)
	}
	if err := validate(b); err != nil {
		return Bot{}, err
	}
	ev := botEvents.New(ctx, outbox.BotCreated, projectID, b.ID, b.Public())
	if err := s.repo.Insert(ctx, b, ev); err != nil {
		return Bot{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: b.ID}, ev)
	return b, nil
}

// Get returns the agent idOrUUID of projectID.
func (s *Service) Get(ctx context.Context, projectID, idOrUUID string) (Bot, error) {
	if strings.TrimSpace(idOrUUID) == "" {
		return Bot{}, apperr.Invalidf("bot_id", "is required")
	}
	return s.repo.Get(ctx, projectID, idOrUUID)
}

// Find returns the agent idOrUUID, whichever project it is in. It is for requests that name an
// agent but not its project: the caller must still check that the agent's project is one it
// may use.
func (s *Service) Find(ctx context.Context, idOrUUID string) (Bot, error) {
	return s.repo.Find(ctx, strings.TrimSpace(idOrUUID))
}

// BySubdomain returns the agent whose public page is at subdomain.
func (s *Service) BySubdomain(ctx context.Context, subdomain string) (Bot, error) {
	subdomain = strings.ToLower(strings.TrimSpace(subdomain))
	if !subdomainPattern.MatchString(subdomain) {
		return Bot{}, apperr.NotFoundf(Resource)
	}
	return s.repo.BySubdomain(ctx, subdomain)
}

// ByHost returns the agent whose page a request's host names: a subdomain of publicDomain (when
// set), else an agent's own domain.
func (s *Service) ByHost(ctx context.Context, host, publicDomain string) (Bot, error) {
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if publicDomain != "" {
		if sub, ok := strings.CutSuffix(host, "."+publicDomain); ok && !strings.Contains(sub, ".") {
			return s.BySubdomain(ctx, sub)
		}
	}
	if host == "" {
		return Bot{}, apperr.NotFoundf(Resource)
	}
	return s.repo.ByDomain(ctx, host)
}

// List returns one page of the project's agents, oldest first.
func (s *Service) List(ctx context.Context, projectID string, page paging.Page) ([]Bot, int, error) {
	return s.repo.List(ctx, projectID, page)
}

// Update applies p to the agent idOrUUID and returns the result. When another request changed
// the agent first, p is applied again to what it left.
func (s *Service) Update(ctx context.Context, projectID, idOrUUID string, p Patch) (Bot, error) {
	return apperr.Reapply(ctx, &s.writes, Resource, projectID+"/"+idOrUUID, func() (Bot, error) { return s.update(ctx, projectID, idOrUUID, p) })
}

func (s *Service) update(ctx context.Context, projectID, idOrUUID string, p Patch) (Bot, error) {
	cur, err := s.Get(ctx, projectID, idOrUUID)
	if err != nil {
		return Bot{}, err
	}
	next := cur.clone()
	if err := p.apply(&next); err != nil {
		return Bot{}, err
	}
	if err := validate(next); err != nil {
		return Bot{}, err
	}
	next.UpdatedAt = s.now()
	next.Rev = cur.Rev + 1
	if next.Active() && !cur.Active() {
		next.ActiveAt = next.UpdatedAt
	}
	ev := botEvents.New(ctx, outbox.BotUpdated, projectID, next.ID, next.Public())
	if err := s.repo.Replace(ctx, next, ev); err != nil {
		return Bot{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: next.ID}, ev)
	return next, nil
}

// Delete tombstones the agent and everything it owns (deals, workflows, calendar settings):
// none of it is found or triggered again.
func (s *Service) Delete(ctx context.Context, projectID, idOrUUID string) error {
	b, err := s.Get(ctx, projectID, idOrUUID)
	if err != nil {
		return err
	}
	ev := botEvents.New(ctx, outbox.BotDeleted, projectID, b.ID, b.Public())
	if err := s.repo.Delete(ctx, b, s.now(), ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: b.ID}, ev)
	return nil
}
