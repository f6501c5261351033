package cache

import (
	"context"
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/usermemory"
)

// userKey is one user of one agent.
type userKey struct{ project, bot, user string }

// userMemories is a user's memories as cached, with whose they are (an empty list names no one).
type userMemories struct {
	key  userKey
	list []usermemory.Memory
}

// userMemoryRepo caches each user's memories: every chat turn of an agent with memory reads
// its user's, and most users have none.
type userMemoryRepo struct {
	usermemory.Repo
	users   *Cache[userKey, userMemories]
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
	r := &userMemoryRepo{Repo: repo, users: New[userKey, userMemories](size, ttl), notices: notices}
	notices.onChange("usermemory", func(id string) {
		r.users.Drop(func(m userMemories) bool { return noticeOf(m.key) == id })
	})
	notices.onReconnect(r.users.Purge)
	return r
}

// noticeOf is the id a notice gives of a user of an agent.
func noticeOf(k userKey) string { return k.project + "/" + k.bot + "/" + k.user }

// ForUser returns a copy of the cached list (callers change what they are given).
func (r *userMemoryRepo) ForUser(ctx context.Context, projectID, botID, userUUID string) ([]usermemory.Memory, error) {
	k := userKey{projectID, botID, userUUID}
	got, err := r.users.Load(ctx, k, func(ctx context.Context) (userMemories, error) {
		list, err := r.Repo.ForUser(ctx, projectID, botID, userUUID)
		return userMemories{key: k, list: list}, err
	})
	return slices.Clone(got.list), err
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
