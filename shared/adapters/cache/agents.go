package cache

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/outbox"
)

// botKey is how an agent was asked for: by project and id or uuid, by id or uuid alone
// (project ""), by subdomain or by domain.
type botKey struct{ by, project, id string }

// agentsRepo caches agents: every request that names one reads it.
type agentsRepo struct {
	agents.Repo
	bots    *Cache[botKey, agents.Bot]
	notices *Notices
}

// Agents returns repo with its agents cached (size entries, kept at most ttl); an agent updated
// or deleted is dropped everywhere through notices. It is repo itself when size is 0.
func Agents(repo agents.Repo, notices *Notices, size int, ttl time.Duration) agents.Repo {
	if size <= 0 {
		return repo
	}
	r := &agentsRepo{Repo: repo, bots: New[botKey, agents.Bot](size, ttl), notices: notices}
	notices.onChange("bot", func(id string) { r.bots.Drop(func(b agents.Bot) bool { return b.ID == id }) })
	notices.onReconnect(r.bots.Purge)
	return r
}

func (r *agentsRepo) Get(ctx context.Context, projectID, idOrUUID string) (agents.Bot, error) {
	return r.bots.Load(ctx, botKey{"id", projectID, idOrUUID}, func(ctx context.Context) (agents.Bot, error) {
		return r.Repo.Get(ctx, projectID, idOrUUID)
	})
}

func (r *agentsRepo) Find(ctx context.Context, idOrUUID string) (agents.Bot, error) {
	return r.bots.Load(ctx, botKey{"id", "", idOrUUID}, func(ctx context.Context) (agents.Bot, error) { return r.Repo.Find(ctx, idOrUUID) })
}

func (r *agentsRepo) BySubdomain(ctx context.Context, subdomain string) (agents.Bot, error) {
	return r.bots.Load(ctx, botKey{"subdomain", "", subdomain}, func(ctx context.Context) (agents.Bot, error) {
		return r.Repo.BySubdomain(ctx, subdomain)
	})
}

func (r *agentsRepo) ByDomain(ctx context.Context, host string) (agents.Bot, error) {
	return r.bots.Load(ctx, botKey{"domain", "", host}, func(ctx context.Context) (agents.Bot, error) { return r.Repo.ByDomain(ctx, host) })
}

// Replace drops the agent whether or not the write won: a conflict means the cached agent is
// stale.
func (r *agentsRepo) Replace(ctx context.Context, b agents.Bot, ev outbox.Event) error {
	err := r.Repo.Replace(ctx, b, ev)
	r.notices.Changed("bot", b.ID)
	return err
}

func (r *agentsRepo) Delete(ctx context.Context, b agents.Bot, at time.Time, ev outbox.Event) error {
	err := r.Repo.Delete(ctx, b, at, ev)
	r.notices.Changed("bot", b.ID)
	return err
}
