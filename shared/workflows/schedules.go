package workflows

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is when a schedule workflow runs: its cron expression read in its time zone. An
// "@every" interval is aligned on the Unix epoch rather than on when the scheduler started, so
// that every scheduler computes the same ticks (and so the same run ids).
func Schedule(w Workflow) (cron.Schedule, error) {
	spec, _ := w.TriggerConfig["cron"].(string)
	tz, _ := w.TriggerConfig["timezone"].(string)
	if tz == "" {
		tz = DefaultTimezone
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("timezone %q: %w", tz, err)
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", spec, err)
	}
	switch s := s.(type) {
	case cron.ConstantDelaySchedule:
		return aligned{every: s.Delay}, nil
	case *cron.SpecSchedule:
		s.Location = loc
		return s, nil
	}
	return s, nil
}

// aligned ticks every interval since the Unix epoch.
type aligned struct{ every time.Duration }

func (a aligned) Next(t time.Time) time.Time { return t.Truncate(a.every).Add(a.every) }

// Schedules keeps a cron entry for every active schedule workflow, each tick starting the
// workflow's run of that tick (Runs.OnTick). It re-reads the workflows every reload interval,
// so a workflow created, changed, deactivated or deleted takes effect within it.
type Schedules struct {
	runs *Runs
	log  *slog.Logger
	cron *cron.Cron

	mu      sync.Mutex
	entries map[string]scheduled // by workflow id
}

// scheduled is a workflow's cron entry, the revision it was made from and its schedule.
type scheduled struct {
	id       cron.EntryID
	revision string
	workflow Workflow
	schedule cron.Schedule
}

// NewSchedules returns the schedules of runs' workflows, on their own cron.
func NewSchedules(runs *Runs, log *slog.Logger) *Schedules {
	return &Schedules{runs: runs, log: log, cron: cron.New(cron.WithLocation(time.UTC)), entries: map[string]scheduled{}}
}

// Run keeps the schedules until ctx ends, re-reading them every reload.
func (s *Schedules) Run(ctx context.Context, reload time.Duration) {
	s.cron.Start()
	defer func() { <-s.cron.Stop().Done() }()
	t := time.NewTicker(reload)
	defer t.Stop()
	for {
		if err := s.Reload(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("reading schedule workflows", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Reload makes the cron entries match the active schedule workflows (a versioned agent's as its
// published version has them).
func (s *Schedules) Reload(ctx context.Context) error {
	list, err := s.runs.scheduled(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(list))
	for _, w := range list {
		seen[w.UUID] = true
		if cur, ok := s.entries[w.UUID]; ok && cur.revision == w.revision() {
			continue
		} else if ok {
			s.cron.Remove(cur.id)
		}
		sched, err := Schedule(w)
		if err != nil {
			s.log.Warn("schedule workflow skipped", "workflow_id", w.UUID, "error", err)
			continue
		}
		s.entries[w.UUID] = scheduled{id: s.cron.Schedule(sched, s.job(ctx, w, sched)), revision: w.revision(), workflow: w, schedule: sched}
	}
	for id, cur := range s.entries {
		if !seen[id] {
			s.cron.Remove(cur.id)
			delete(s.entries, id)
		}
	}
	return nil
}

// Entries is how many workflows have a cron entry.
func (s *Schedules) Entries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// job starts w's run of the tick that is due when the cron fires it.
func (s *Schedules) job(ctx context.Context, w Workflow, sched cron.Schedule) cron.Job {
	return cron.FuncJob(func() {
		if err := s.fire(ctx, w, sched, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("starting a scheduled run", "workflow_id", w.UUID, "error", err)
		}
	})
}

// FireAt starts, for every scheduled workflow, the run of its last tick at or before now (within
// the minute before it): what the cron does as each tick comes, for a given clock.
func (s *Schedules) FireAt(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	entries := make([]scheduled, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	for _, e := range entries {
		if err := s.fire(ctx, e.workflow, e.schedule, now); err != nil {
			return err
		}
	}
	return nil
}

// fire starts w's run of its last tick at or before now, if one fell in the minute before.
func (s *Schedules) fire(ctx context.Context, w Workflow, sched cron.Schedule, now time.Time) error {
	tick := sched.Next(now.Add(-time.Minute))
	if tick.After(now) {
		return nil
	}
	for next := sched.Next(tick); !next.After(now); next = sched.Next(tick) {
		tick = next
	}
	return s.runs.OnTick(ctx, w, tick)
}
