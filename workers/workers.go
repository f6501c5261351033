// Package workers is the asynq server: one handler per task type, registered on one mux.
package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// Deps is what the worker role needs.
type Deps struct {
	Logger          *slog.Logger
	Redis           asynq.RedisConnOpt
	Concurrency     int
	ShutdownTimeout time.Duration
}

// Run serves tasks until ctx ends, then stops taking new ones and waits for running ones (up to
// the shutdown timeout; unfinished ones go back to the queue and are retried).
func Run(ctx context.Context, d Deps) error {
	srv := asynq.NewServer(d.Redis, asynq.Config{
		Concurrency:     d.Concurrency,
		ShutdownTimeout: d.ShutdownTimeout,
		Logger:          asynqLogger{d.Logger.With("component", "worker")},
		LogLevel:        asynq.WarnLevel,
	})
	if err := srv.Start(mux()); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	d.Logger.Info("worker started", "concurrency", d.Concurrency)
	<-ctx.Done()
	srv.Shutdown()
	d.Logger.Info("worker stopped")
	return nil
}

// mux routes each task type to its handler.
func mux() *asynq.ServeMux {
	return asynq.NewServeMux()
}

// asynqLogger writes asynq's log lines through slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
