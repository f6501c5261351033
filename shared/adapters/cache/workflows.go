package cache

import (
	"context"
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// workflowsKind names the notices of a change of an agent's workflows (its id is
// "<project>/<agent>").
const workflowsKind = "workflows"

// triggerKey is the event type an agent's workflows are looked up for.
type triggerKey struct{ project, bot, event string }

// triggered is the list of an agent's active workflows an event type triggers, as cached.
type triggered struct {
	key  triggerKey
	list []workflows.Workflow
}

// workflowsRepo caches which workflows each event type triggers: every event of every agent
// (each chat message, each deal update) asks, and workflows change seldom.
type workflowsRepo struct {
	workflows.Repo
	triggered *Cache[triggerKey, triggered]
	notices   *Notices
}

// Workflows returns repo with the workflows each event type of an agent triggers cached (size
// lists, an empty one included, kept at most ttl); a workflow written drops its agent's lists
// everywhere through notices. It is repo itself when size is 0.
func Workflows(repo workflows.Repo, notices *Notices, size int, ttl time.Duration) workflows.Repo {
	if size <= 0 {
		return repo
	}
	r := &workflowsRepo{Repo: repo, triggered: New[triggerKey, triggered](size, ttl), notices: notices}
	notices.onChange(workflowsKind, func(id string) {
		r.triggered.Drop(func(t triggered) bool { return t.key.project+"/"+t.key.bot == id })
	})
	notices.onReconnect(r.triggered.Purge)
	return r
}

// Triggered returns a copy of the cached list.
func (r *workflowsRepo) Triggered(ctx context.Context, projectID, botID, eventType string) ([]workflows.Workflow, error) {
	k := triggerKey{projectID, botID, eventType}
	got, err := r.triggered.Load(ctx, k, func(ctx context.Context) (triggered, error) {
		list, err := r.Repo.Triggered(ctx, projectID, botID, eventType)
		return triggered{key: k, list: list}, err
	})
	return slices.Clone(got.list), err
}

// changed tells every process the agent's workflows changed, whether or not the write landed.
func (r *workflowsRepo) changed(w workflows.Workflow, err error) error {
	r.notices.Changed(workflowsKind, w.ProjectID+"/"+w.BotID)
	return err
}

func (r *workflowsRepo) Insert(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	return r.changed(w, r.Repo.Insert(ctx, w, ev))
}

func (r *workflowsRepo) Replace(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	return r.changed(w, r.Repo.Replace(ctx, w, ev))
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
