package cache

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/usermemory"
)

// userKey is one user of one agent.
type userKey struct{ project, bot, user string }

// userMemoryRepo caches each user's memories: every chat turn of an agent with memory reads
// its user's, and most users have none.
type userMemoryRepo struct {
	usermemory.Repo
	users   lists[userKey, usermemory.Memory]
	notices *Notices
}

// UserMemories returns repo with each user's memories cached (size users, kept at most ttl),
// an empty list included, so that a turn of a user the process read within ttl makes no store
// command; a memory written or deleted drops its user's everywhere through notices. It is repo
// itself when size is 0.
func UserMemories(repo usermemory.Repo, notices *Notices, size int, ttl time.Duration) usermemory.Repo {
	if size <= 0 {
		return repo
	}
	return &userMemoryRepo{Repo: repo, users: newLists[userKey, usermemory.Memory](notices, "usermemory", noticeOf, size, ttl), notices: notices}
}

// noticeOf is the id a notice gives of a user of an agent.
func noticeOf(k userKey) string { return k.project + "/" + k.bot + "/" + k.user }

func (r *userMemoryRepo) ForUser(ctx context.Context, projectID, botID, userUUID string) ([]usermemory.Memory, error) {
	return r.users.load(ctx, userKey{projectID, botID, userUUID}, func(ctx context.Context) ([]usermemory.Memory, error) {
		return r.Repo.ForUser(ctx, projectID, botID, userUUID)
	})
}

// Put drops the user's memories whether or not the write landed.
func (r *userMemoryRepo) Put(ctx context.Context, m usermemory.Memory) error {
	err := r.Repo.Put(ctx, m)
	r.notices.Changed("usermemory", noticeOf(userKey{m.ProjectID, m.BotID, m.UserUUID}))
	return err
}

func (r *userMemoryRepo) Delete(ctx context.Context, projectID, botID, id string) (usermemory.Memory, error) {
	m, err := r.Repo.Delete(ctx, projectID, botID, id)
	if err == nil {
		r.notices.Changed("usermemory", noticeOf(userKey{projectID, botID, m.UserUUID}))
	}
	return m, err
}
