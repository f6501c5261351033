package cache

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// workflowsKind names the notices of a change of an agent's workflows (its id is
// "<project>/<agent>").
const workflowsKind = "workflows"

// triggerKey is the event type an agent's workflows are looked up for.
type triggerKey struct{ project, bot, event string }

// agentOf is the id a notice gives of an agent's workflows.
func agentOf(k triggerKey) string { return k.project + "/" + k.bot }

// workflowsRepo caches which workflows each event type triggers: every event of every agent
// (each chat message, each deal update) asks, and workflows change seldom; and the workflows'
// revisions, which never change, that the events of versioned agents trigger.
type workflowsRepo struct {
	workflows.Repo
	triggered lists[triggerKey, workflows.Workflow]
	revisions *Cache[revisionKey, workflows.Workflow]
	notices   *Notices
}

// Workflows returns repo with the workflows each event type of an agent triggers cached (size
// lists, an empty one included, kept at most ttl), and as many workflows' revisions; a workflow
// written drops its agent's lists everywhere through notices. It is repo itself when size is 0.
func Workflows(repo workflows.Repo, notices *Notices, size int, ttl time.Duration) workflows.Repo {
	if size <= 0 {
		return repo
	}
	return &workflowsRepo{Repo: repo, triggered: newLists[triggerKey, workflows.Workflow](notices, workflowsKind, agentOf, size, ttl),
		revisions: New[revisionKey, workflows.Workflow](size, ttl), notices: notices}
}

// Revision is read once a TTL: a revision never changes.
func (r *workflowsRepo) Revision(ctx context.Context, projectID, botID, revision string) (workflows.Workflow, error) {
	return r.revisions.Load(ctx, revisionKey{projectID, botID, revision}, func(ctx context.Context) (workflows.Workflow, error) {
		return r.Repo.Revision(ctx, projectID, botID, revision)
	})
}

func (r *workflowsRepo) Triggered(ctx context.Context, projectID, botID, eventType string) ([]workflows.Workflow, error) {
	return r.triggered.load(ctx, triggerKey{projectID, botID, eventType}, func(ctx context.Context) ([]workflows.Workflow, error) {
		return r.Repo.Triggered(ctx, projectID, botID, eventType)
	})
}

// changed tells every process the agent's workflows changed, whether or not the write landed.
func (r *workflowsRepo) changed(w workflows.Workflow, err error) error {
	r.notices.Changed(workflowsKind, agentOf(triggerKey{project: w.ProjectID, bot: w.BotID}))
	return err
}

func (r *workflowsRepo) Insert(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	return r.changed(w, r.Repo.Insert(ctx, w, ev))
}

func (r *workflowsRepo) Replace(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	return r.changed(w, r.Repo.Replace(ctx, w, ev))
}

func (r *workflowsRepo) Restore(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	return r.changed(w, r.Repo.Restore(ctx, w, ev))
}

func (r *workflowsRepo) Delete(ctx context.Context, w workflows.Workflow, at time.Time, ev outbox.Event) error {
	return r.changed(w, r.Repo.Delete(ctx, w, at, ev))
}

// workflowRunsRepo caches the projects' webhook signing secrets: every webhook delivery signs
// with its project's, and a secret, once made, never changes.
type workflowRunsRepo struct {
	workflows.RunRepo
	secrets *Cache[string, string]
}

// WorkflowRuns returns repo with the projects' signing secrets cached (size projects, kept at
// most ttl). It is repo itself when size is 0.
func WorkflowRuns(repo workflows.RunRepo, size int, ttl time.Duration) workflows.RunRepo {
	if size <= 0 {
		return repo
	}
	return &workflowRunsRepo{RunRepo: repo, secrets: New[string, string](size, ttl)}
}

func (r *workflowRunsRepo) Secret(ctx context.Context, projectID, fresh string) (string, error) {
	return r.secrets.Load(ctx, projectID, func(ctx context.Context) (string, error) { return r.RunRepo.Secret(ctx, projectID, fresh) })
}
