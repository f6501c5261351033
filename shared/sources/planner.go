package sources

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/tasks"
)

// Planner is the scheduler's part of sources: it queues due syncs, the sweep, and ingestion
// of sources stuck in processing, and repairs retrieval's list of live sources. Every task id is derived from the work, so two planners
// queue each piece once.
type Planner struct {
	repo       Repo
	queue      tasks.Tracker
	stuckAfter time.Duration
	log        *slog.Logger
}

// NewPlanner returns the planner; a source pending longer than stuckAfter is ingested anew.
func NewPlanner(repo Repo, queue tasks.Tracker, stuckAfter time.Duration, log *slog.Logger) *Planner {
	return &Planner{repo: repo, queue: queue, stuckAfter: stuckAfter, log: log}
}

// repairWindow is how far back Plan re-derives the live list of changed sources: several plan
// periods, so a crash is repaired even when a plan run was missed.
const repairWindow = 5 * time.Minute

// planBatch bounds the sources one Plan looks at per kind of work.
const planBatch = 500

// Plan queues the work due at now.
func (p *Planner) Plan(ctx context.Context, now time.Time) error {
	due, err := p.repo.Due(ctx, now, planBatch)
	if err != nil {
		return err
	}
	for _, s := range due {
		at := s.NextSyncAt.UTC()
		if err := p.queue.Enqueue(ctx, tasks.NewSourceSyncTask(s.ID, at)); err != nil {
			return err
		}
	}
	if err := p.reconcile(ctx, now); err != nil {
		return err
	}
	if err := p.repo.RepairLive(ctx, now.Add(-repairWindow)); err != nil {
		return err
	}
	return p.queue.Enqueue(ctx, tasks.NewSourceSweepTask(now))
}

// requeueAfter is how long a new source may stay pending before Plan queues its ingestion
// again: the API keeps a source it could not queue (Redis was down) and answers 200.
const requeueAfter = time.Minute

// reconcile queues again the ingestion of new sources pending for requeueAfter, under the same
// task id, so one that is queued, running or retrying is left alone and one the API could not
// queue is queued now. Sources stuck in processing for stuckAfter (their task was lost with
// Redis, or is failing without end) get a new generation, queued; a late run of the old task
// finds itself superseded.
func (p *Planner) reconcile(ctx context.Context, now time.Time) error {
	pending, err := p.repo.Stuck(ctx, now.Add(-min(requeueAfter, p.stuckAfter)), planBatch)
	if err != nil {
		return err
	}
	for _, s := range pending {
		if s.PendingSince != nil && s.PendingSince.After(now.Add(-p.stuckAfter)) {
			if s.Status != StatusProcessing {
				continue // a re-sync: its own task (a sync task) is the one to wait for
			}
			if err := p.queue.Enqueue(ctx, tasks.NewSourceIngestTask(s.ID, s.Pending)); err != nil {
				return err
			}
			continue
		}
		if live, err := p.queue.Live(ctx, tasks.NewSourceIngestTask(s.ID, s.Pending)); err != nil {
			return err
		} else if live {
			continue // its task is still under way (retrying, say): a second generation would race it
		}
		gen := uuid.NewSHA1(uuid.NameSpaceURL, []byte(s.ID+"@"+s.Pending)).String()
		next, err := p.repo.Pend(ctx, s.ID, s.Pending, gen, now)
		if err != nil {
			return err
		}
		if next.Pending != gen {
			continue
		}
		p.log.Info("re-queueing stuck source", "source_id", s.ID, "pending_since", s.PendingSince)
		if err := p.queue.Enqueue(ctx, tasks.NewSourceIngestTask(s.ID, gen)); err != nil {
			return err
		}
	}
	return nil
}
