package cache

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/tenancy"
)

// tenancyRepo caches API keys by hash and projects by account and id: every authenticated
// request reads both. Projects never change once created.
type tenancyRepo struct {
	tenancy.Repo
	keys     *Cache[string, tenancy.Key]
	projects *Cache[[2]string, tenancy.Project]
	notices  *Notices
}

// Tenancy returns repo with its keys and projects cached (size entries each, kept at most ttl);
// a revoked key is dropped everywhere through notices. It is repo itself when size is 0.
func Tenancy(repo tenancy.Repo, notices *Notices, size int, ttl time.Duration) tenancy.Repo {
	if size <= 0 {
		return repo
	}
	r := &tenancyRepo{Repo: repo, keys: New[string, tenancy.Key](size, ttl),
		projects: New[[2]string, tenancy.Project](size, ttl), notices: notices}
	notices.onChange("key", func(id string) { r.keys.Drop(func(k tenancy.Key) bool { return k.ID == id }) })
	notices.onReconnect(r.keys.Purge, r.projects.Purge)
	return r
}

func (r *tenancyRepo) KeyByHash(ctx context.Context, hash string) (tenancy.Key, error) {
	return r.keys.Load(ctx, hash, func(ctx context.Context) (tenancy.Key, error) { return r.Repo.KeyByHash(ctx, hash) })
}

func (r *tenancyRepo) RevokeKey(ctx context.Context, accountID, keyID string, at time.Time) error {
	err := r.Repo.RevokeKey(ctx, accountID, keyID, at)
	r.notices.Changed("key", keyID)
	return err
}

func (r *tenancyRepo) Project(ctx context.Context, accountID, id string) (tenancy.Project, error) {
	return r.projects.Load(ctx, [2]string{accountID, id}, func(ctx context.Context) (tenancy.Project, error) {
		return r.Repo.Project(ctx, accountID, id)
	})
}
