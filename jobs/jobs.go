// Package jobs is the scheduler role: cron entries that enqueue periodic work. It never does the
// work itself, and every enqueue carries a deterministic task id, so two schedulers are harmless.
package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agentplane/agentplane/shared/adapters/metrics"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/heartbeats"
	"github.com/agentplane/agentplane/shared/kit/every"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/retention"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/workflows"
)

// Deps is what the scheduler needs.
type Deps struct {
	Logger *slog.Logger
	// Outbox relays domain events whose inline publish failed (NATS was down).
	Outbox *outbox.Dispatcher
	// Sources queues due syncs, the sweep of forgotten sources and stuck ingestions.
	Sources *sources.Planner
	// Runs queues again agent runs whose task was lost.
	Runs *agentruns.Service
	// EvalRuns queues again eval runs whose task was lost.
	EvalRuns *evals.Runs
	// Schedules starts the runs of schedule workflows.
	Schedules *workflows.Schedules
	// Heartbeats queues the due firings of heartbeats and settles those their worker left.
	Heartbeats *heartbeats.Service
	// Metrics receive the outbox backlog.
	Metrics *metrics.Metrics
	// Retention deletes records past their retention.
	Retention *retention.Service
	// CRM sends task.due for the tasks that came due.
	CRM *crm.Service
}

// scheduleReload is how often the schedule workflows are read again: a change to one takes
// effect within it.
const scheduleReload = 5 * time.Second

// relayInterval is how often the outbox relay looks for events left behind.
const relayInterval = time.Second

// heartbeatInterval is how often due heartbeats are looked for: a firing starts within it.
const heartbeatInterval = time.Second

// taskDueInterval is how often tasks that came due are looked for: task.due is sent within it.
const taskDueInterval = 5 * time.Second

// Schedule runs the schedules and the outbox relay until ctx ends, then waits for entries that are
// enqueueing.
func Schedule(ctx context.Context, d Deps) error {
	log := d.Logger.With("component", "scheduler")
	c := cron.New(cron.WithLocation(time.UTC), cron.WithLogger(cronLogger{log}))
	if _, err := c.AddFunc("@every 1m", func() {
		if err := d.Sources.Plan(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
			log.Warn("planning source work", "error", err)
		}
	}); err != nil {
		return err
	}
	if _, err := c.AddFunc("@every 1m", func() {
		if _, err := d.Runs.Requeue(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
			log.Warn("requeueing agent runs", "error", err)
		}
	}); err != nil {
		return err
	}
	if _, err := c.AddFunc("@every 1m", func() {
		if _, err := d.EvalRuns.Requeue(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
			log.Warn("requeueing eval runs", "error", err)
		}
	}); err != nil {
		return err
	}
	if _, err := c.AddFunc("@every 1m", func() {
		if _, err := d.Heartbeats.Reconcile(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
			log.Warn("settling heartbeat firings", "error", err)
		}
	}); err != nil {
		return err
	}
	if _, err := c.AddFunc("@every 10m", func() {
		if _, err := d.Retention.Sweep(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
			log.Warn("deleting records past their retention", "error", err)
		}
	}); err != nil {
		return err
	}
	c.Start()
	d.Logger.Info("scheduler started", "entries", len(c.Entries()))
	relayed, scheduled, beating, due := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(relayed)
		d.Outbox.Relay(ctx, relayInterval, d.Metrics.OutboxBacklog)
	}()
	go func() {
		defer close(scheduled)
		d.Schedules.Run(ctx, scheduleReload)
	}()
	go func() {
		defer close(beating)
		every.Tick(ctx, heartbeatInterval, func() bool {
			if _, err := d.Heartbeats.Plan(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
				log.Warn("queueing heartbeat firings", "error", err)
			}
			return true
		})
	}()
	go func() {
		defer close(due)
		every.Tick(ctx, taskDueInterval, func() bool {
			if _, err := d.CRM.NoticeDue(ctx, time.Now().UTC()); err != nil && ctx.Err() == nil {
				log.Warn("sending task.due", "error", err)
			}
			return true
		})
	}()
	<-ctx.Done()
	<-c.Stop().Done()
	<-relayed
	<-scheduled
	<-beating
	<-due
	d.Logger.Info("scheduler stopped")
	return nil
}

type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug(msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error(msg, append(kv, "error", err)...)
}
