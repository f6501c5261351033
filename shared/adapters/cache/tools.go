package cache

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/tools"
)

// toolsKind names the notices of a change of an agent's own tools (its id is "<project>/<agent>").
const toolsKind = "tools"

// toolsKey is the agent whose tools are listed.
type toolsKey struct{ project, bot string }

func (k toolsKey) id() string { return k.project + "/" + k.bot }

// toolsRepo caches each agent's own tools: every agent run offers them to the model, and they
// change seldom; and the tools' revisions, which never change, that runs of a version whose
// tools differ from the agent's are offered.
type toolsRepo struct {
	tools.Repo
	all       lists[toolsKey, tools.Tool]
	revisions *Cache[revisionKey, tools.Tool]
	notices   *Notices
}

// revisionKey is a revision of a tool of an agent.
type revisionKey struct{ project, bot, revision string }

// Tools returns repo with each agent's list of its own tools cached (size agents, an empty list
// included, kept at most ttl), and as many tools' revisions; a tool written drops its agent's
// list everywhere through notices.
// It is repo itself when size is 0.
func Tools(repo tools.Repo, notices *Notices, size int, ttl time.Duration) tools.Repo {
	if size <= 0 {
		return repo
	}
	return &toolsRepo{Repo: repo, all: newLists[toolsKey, tools.Tool](notices, toolsKind, toolsKey.id, size, ttl),
		revisions: New[revisionKey, tools.Tool](size, ttl), notices: notices}
}

// Revision is read once a TTL: a revision never changes.
func (r *toolsRepo) Revision(ctx context.Context, projectID, botID, revision string) (tools.Tool, error) {
	return r.revisions.Load(ctx, revisionKey{projectID, botID, revision}, func(ctx context.Context) (tools.Tool, error) {
		return r.Repo.Revision(ctx, projectID, botID, revision)
	})
}

func (r *toolsRepo) All(ctx context.Context, projectID, botID string) ([]tools.Tool, error) {
	return r.all.load(ctx, toolsKey{projectID, botID}, func(ctx context.Context) ([]tools.Tool, error) {
		return r.Repo.All(ctx, projectID, botID)
	})
}

// changed tells every process the agent's tools changed, whether or not the write landed.
func (r *toolsRepo) changed(projectID, botID string) {
	r.notices.Changed(toolsKind, toolsKey{projectID, botID}.id())
}

func (r *toolsRepo) Insert(ctx context.Context, t tools.Tool) error {
	err := r.Repo.Insert(ctx, t)
	r.changed(t.ProjectID, t.BotID)
	return err
}

func (r *toolsRepo) Set(ctx context.Context, projectID, botID, id string, fields map[string]any) (tools.Tool, error) {
	t, err := r.Repo.Set(ctx, projectID, botID, id, fields)
	r.changed(projectID, botID)
	return t, err
}

func (r *toolsRepo) Restore(ctx context.Context, t tools.Tool) error {
	err := r.Repo.Restore(ctx, t)
	r.changed(t.ProjectID, t.BotID)
	return err
}

func (r *toolsRepo) Delete(ctx context.Context, projectID, botID, id string) error {
	err := r.Repo.Delete(ctx, projectID, botID, id)
	r.changed(projectID, botID)
	return err
}
