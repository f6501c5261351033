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
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tools"
)

// botEvents are the events of agents: their data is the agent as users see it (Bot.Public).
var botEvents = outbox.Declare[Bot](outbox.BotCreated, outbox.BotUpdated, outbox.BotDeleted)

// Resource names agents in outbox references.
const Resource = "bot"

// Service holds the agent rules; persistence is its Repo's, events go through the dispatcher.
type Service struct {
	repo     Repo
	versions VersionRepo
	events   *outbox.Dispatcher
	hosts    Hosts
	tools    ToolSets
	flows    WorkflowSets // the agents' workflows, for versions
	sources  SourceIDs
	sets     SourceSets
	now      func() time.Time
	writes   keylock.Locks // agent updates of this process, one at a time per agent
}

// NewService returns the agent service, its versions kept in versions; agents' domains and
// subdomains are checked against hosts.
func NewService(repo Repo, versions VersionRepo, events *outbox.Dispatcher, hosts Hosts) *Service {
	return &Service{repo: repo, versions: versions, events: events, hosts: hosts, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Create creates an agent in projectID, its version 1 made by by. Status defaults to active.
func (s *Service) Create(ctx context.Context, projectID, by string, c Create) (Bot, error) {
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
		Versioning:     c.Versioning,
		Tools:          []tools.State{},
		Workflows:      []WorkflowState{},
	}
	if s.sets != nil {
		b.Sources = &memory.SetRef{Digest: memory.SetDigest(nil)}
	}
	if c.Status.Set {
		b.Status = int(c.Status.Value)
	}
	if err := validate(b, s.hosts); err != nil {
		return Bot{}, err
	}
	first := b.latest()
	first.By = by
	b.Latest, b.Version, b.PublishedVersion = &first, 1, 1
	ev := botEvents.New(ctx, outbox.BotCreated, projectID, b.ID, b.Public())
	if err := s.repo.Insert(ctx, b, ev); err != nil {
		return Bot{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: b.ID}, ev)
	s.keep(ctx, first)
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

// ByHost returns the agent whose page a request's host names: a subdomain of the public domain
// (when set), else an agent's own domain, verified.
func (s *Service) ByHost(ctx context.Context, host string) (Bot, error) {
	host = normalizeHost(host)
	if s.hosts.PublicDomain != "" {
		if sub, ok := strings.CutSuffix(host, "."+s.hosts.PublicDomain); ok && !strings.Contains(sub, ".") {
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

// Update applies p to the agent idOrUUID, a change by by, and returns the result. When another
// request changed the agent first, p is applied again to what it left. A change of the agent's
// behaviour (Config) is a new version: published at once, or, for a versioned agent, its draft
// (p applies to the draft's behaviour, and the agent keeps the published one). A domain another
// agent serves is a Conflict (domain_taken), as is a subdomain another agent or a published
// workspace has (subdomain_taken).
func (s *Service) Update(ctx context.Context, projectID, idOrUUID, by string, p Patch) (Bot, error) {
	return s.change(ctx, projectID, idOrUUID, func(cur, next *Bot) error {
		cur.latest().Config.applyTo(next)
		if cur.PublishGate != nil && !cur.Versioning && p.PublishGate == nil && p.Versioning == nil {
			// A gate stored before gates needed versioning held nothing (each change was published
			// at once): an update that names neither drops it rather than being refused for it.
			next.PublishGate = nil
		}
		if err := p.apply(next); err != nil {
			return err
		}
		if err := validate(*next, s.hosts); err != nil {
			return err
		}
		claimDomain(cur, next)
		if next.Domain != "" && next.Domain != cur.Domain {
			switch other, err := s.repo.ByDomain(ctx, next.Domain); {
			case err == nil && other.ID != next.ID:
				return domainTaken(next.Domain)
			case err != nil && !apperr.IsNotFound(err):
				return err
			}
		}
		if next.Subdomain != cur.Subdomain && s.hosts.Sites != nil {
			switch taken, err := s.hosts.Sites.HasSubdomain(ctx, next.Subdomain); {
			case err != nil:
				return err
			case taken:
				return apperr.New(apperr.Conflict, "subdomain_taken", "The subdomain "+next.Subdomain+" is a workspace's site: choose another.")
			}
		}
		versioned(*cur, next, by, s.now(), false)
		if p.Canary != nil {
			return s.canaryOf(ctx, next, p.Canary)
		}
		return nil
	})
}

// change writes what edit makes of a copy of the agent idOrUUID (next; cur is the stored agent),
// applying it again to what another request left when one changed the agent first.
func (s *Service) change(ctx context.Context, projectID, idOrUUID string, edit func(cur, next *Bot) error) (Bot, error) {
	return apperr.Reapply(ctx, &s.writes, Resource, projectID+"/"+idOrUUID, func() (Bot, error) {
		cur, err := s.Get(ctx, projectID, idOrUUID)
		if err != nil {
			return Bot{}, err
		}
		next := cur.clone()
		if err := edit(&cur, &next); err != nil {
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
		s.keep(ctx, cur.latest(), next.latest())
		return next, nil
	})
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
