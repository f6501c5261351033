// Package workers is the asynq server: one handler per task type, registered on one mux.
package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Deps is what the worker role needs.
type Deps struct {
	Logger          *slog.Logger
	Redis           asynq.RedisConnOpt
	Queue           string
	Concurrency     int
	ShutdownTimeout time.Duration
	Sources         *sources.Ingester
	// RetryDelay spaces the attempts of a failing task; nil is asynq's exponential backoff.
	RetryDelay asynq.RetryDelayFunc
	// RetryCheckInterval is how often tasks waiting for a retry are looked for; 0 is asynq's 5s.
	RetryCheckInterval time.Duration
}

// Run serves tasks until ctx ends, then stops taking new ones and waits for running ones (up to
// the shutdown timeout; unfinished ones go back to the queue and are retried).
func Run(ctx context.Context, d Deps) error {
	srv := asynq.NewServer(d.Redis, asynq.Config{
		Concurrency:              d.Concurrency,
		Queues:                   map[string]int{d.Queue: 1},
		ShutdownTimeout:          d.ShutdownTimeout,
		RetryDelayFunc:           d.RetryDelay,
		DelayedTaskCheckInterval: d.RetryCheckInterval,
		Logger:                   asynqLogger{d.Logger.With("component", "worker")},
		LogLevel:                 asynq.WarnLevel,
	})
	if err := srv.Start(mux(d)); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	d.Logger.Info("worker started", "concurrency", d.Concurrency, "queue", d.Queue)
	<-ctx.Done()
	srv.Shutdown()
	d.Logger.Info("worker stopped")
	return nil
}

// mux routes each task type to its handler.
func mux(d Deps) *asynq.ServeMux {
	m := asynq.NewServeMux()
	m.HandleFunc(tasks.IngestSource, ingest(d, func(ctx context.Context, t sources.IngestTask, final bool) error {
		return d.Sources.Ingest(ctx, t, final)
	}))
	m.HandleFunc(tasks.SyncSource, ingest(d, func(ctx context.Context, t sources.SyncTask, final bool) error {
		return d.Sources.Sync(ctx, t, final)
	}))
	m.HandleFunc(tasks.SweepSources, func(ctx context.Context, _ *asynq.Task) error { return d.Sources.Sweep(ctx) })
	return m
}

// ingest adapts an ingestion handler: it decodes the payload, tells the handler whether this
// is the last attempt, and ends the task once a permanent failure is recorded on the source.
func ingest[T any](d Deps, h func(ctx context.Context, t T, final bool) error) asynq.HandlerFunc {
	return func(ctx context.Context, task *asynq.Task) error {
		var t T
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		retried, _ := asynq.GetRetryCount(ctx)
		maxRetry, _ := asynq.GetMaxRetry(ctx)
		err := h(ctx, t, retried >= maxRetry)
		if errors.Is(err, sources.ErrPermanent) {
			d.Logger.Info("ingestion failed for good", "task", task.Type(), "error", err)
			return nil
		}
		return err
	}
}

// asynqLogger writes asynq's log lines through slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
