package cache

import (
	"context"
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/outbox"
)

// crmRepo caches each project's stages, which every deal written reads to place the deal, and
// contact statuses, which every contact made or given a status reads.
type crmRepo struct {
	crm.Repo
	stages   *Cache[string, []crm.Stage]
	statuses *Cache[string, crm.StatusSet]
	notices  *Notices
}

// CRM returns repo with the projects' stages and contact statuses cached (size projects, kept at
// most ttl); a pipeline, stage or statuses written drops its project's everywhere through
// notices. It is repo itself when size is 0.
func CRM(repo crm.Repo, notices *Notices, size int, ttl time.Duration) crm.Repo {
	if size <= 0 {
		return repo
	}
	r := &crmRepo{Repo: repo, stages: New[string, []crm.Stage](size, ttl), statuses: New[string, crm.StatusSet](size, ttl), notices: notices}
	notices.onChange("stages", func(project string) {
		r.stages.Drop(func(s []crm.Stage) bool { return len(s) > 0 && s[0].ProjectID == project })
	})
	notices.onChange("contact-statuses", func(project string) {
		r.statuses.Drop(func(s crm.StatusSet) bool { return s.ProjectID == project })
	})
	notices.onReconnect(r.stages.Purge, r.statuses.Purge)
	return r
}

// EnsureStages returns a copy of the cached stages (callers change what they are given) once
// the defaults were ensured.
func (r *crmRepo) EnsureStages(ctx context.Context, stages []crm.Stage) ([]crm.Stage, error) {
	if len(stages) == 0 {
		return r.Repo.EnsureStages(ctx, stages)
	}
	got, err := r.stages.Load(ctx, stages[0].ProjectID, func(ctx context.Context) ([]crm.Stage, error) {
		return r.Repo.EnsureStages(ctx, stages)
	})
	return slices.Clone(got), err
}

// changed tells every process the project's stages changed, whether or not the write landed.
func (r *crmRepo) changed(project string, err error) error {
	r.notices.Changed("stages", project)
	return err
}

func (r *crmRepo) InsertPipeline(ctx context.Context, p crm.Pipeline, ev outbox.Event) error {
	return r.changed(p.ProjectID, r.Repo.InsertPipeline(ctx, p, ev))
}

func (r *crmRepo) RenamePipeline(ctx context.Context, projectID, id, name string, ev outbox.Event) error {
	return r.changed(projectID, r.Repo.RenamePipeline(ctx, projectID, id, name, ev))
}

func (r *crmRepo) DeletePipeline(ctx context.Context, projectID, id string, ev outbox.Event) (outbox.Ref, error) {
	ref, err := r.Repo.DeletePipeline(ctx, projectID, id, ev)
	return ref, r.changed(projectID, err)
}

func (r *crmRepo) InsertStage(ctx context.Context, s crm.Stage, ev *outbox.Event) error {
	return r.changed(s.ProjectID, r.Repo.InsertStage(ctx, s, ev))
}

func (r *crmRepo) ReplaceStage(ctx context.Context, s crm.Stage, ev outbox.Event) error {
	return r.changed(s.ProjectID, r.Repo.ReplaceStage(ctx, s, ev))
}

func (r *crmRepo) DeleteStage(ctx context.Context, projectID, id string, ev outbox.Event) (outbox.Ref, error) {
	ref, err := r.Repo.DeleteStage(ctx, projectID, id, ev)
	return ref, r.changed(projectID, err)
}

// ContactStatuses returns the cached statuses, a copy (callers change what they are given).
func (r *crmRepo) ContactStatuses(ctx context.Context, projectID string) (crm.StatusSet, error) {
	set, err := r.statuses.Load(ctx, projectID, func(ctx context.Context) (crm.StatusSet, error) {
		return r.Repo.ContactStatuses(ctx, projectID)
	})
	set.Statuses = slices.Clone(set.Statuses)
	return set, err
}

// WriteContactStatuses tells every process the project's statuses changed, whether or not the
// write landed.
func (r *crmRepo) WriteContactStatuses(ctx context.Context, set crm.StatusSet) error {
	err := r.Repo.WriteContactStatuses(ctx, set)
	r.notices.Changed("contact-statuses", set.ProjectID)
	return err
}
