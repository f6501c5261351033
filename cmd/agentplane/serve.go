package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/jobs"
	"github.com/agentplane/agentplane/shared/adapters/tracing"
	"github.com/agentplane/agentplane/shared/devenv/devstack"
	"github.com/agentplane/agentplane/shared/kit/config"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/workers"
)

// serve runs a role until ctx ends, then shuts it down gracefully.
func serve(ctx context.Context, role string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(role, getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	stopTracing, err := tracing.Setup(ctx, tracing.Config{Endpoint: cfg.TraceEndpoint, Role: role, Ratio: cfg.TraceRatio, Logger: log.With("component", "tracing")})
	if err != nil {
		return err
	}
	defer flushTraces(context.WithoutCancel(ctx), stopTracing, log)
	var stack *devstack.Stack
	if role == "dev" {
		if stack, err = devstack.Start(ctx, &cfg, log); err != nil {
			return err
		}
		defer stack.Close(context.WithoutCancel(ctx))
	}
	conns, err := app.Connect(cfg, log)
	if err != nil {
		return err
	}
	d := app.New(cfg, log, conns)
	defer closeApp(context.WithoutCancel(ctx), d)

	var banner func(addr, smtpAddr string)
	if role == "dev" {
		if banner, err = devSetup(ctx, d, stdout); err != nil {
			return err
		}
		if err := stack.Reindex(ctx, cfg.MongoDatabase); err != nil {
			return err
		}
	}
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 3)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writer, err := d.Events()
	if err != nil {
		return err
	}
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		writer.Beat(ctx)
	}()
	defer leave(context.WithoutCancel(ctx), cancel, writer, beating, log)
	start := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil {
				errs <- err
				cancel()
			}
		})
	}
	if role == "api" || role == "dev" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
		}
		var smtpAddr string
		if addr := smtpListenAddr(cfg); addr != "" {
			srv, sl, err := listenSMTP(d, addr)
			if err != nil {
				return err
			}
			smtpAddr = sl.Addr().String()
			start(func() error { return serveSMTP(ctx, d, srv, sl) })
		}
		if banner != nil {
			banner(ln.Addr().String(), smtpAddr)
		}
		start(func() error { return serveHTTP(ctx, d, ln) })
	}
	if (role == "worker" || role == "scheduler") && cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", cfg.MetricsAddr, err)
		}
		start(func() error { return listen(ctx, d, ln, api.NewOps(d.Log, d.Checks(), d.Metrics), "ops") })
	}
	if role == "worker" || role == "dev" {
		w, err := d.Worker()
		if err != nil {
			return err
		}
		d.WatchQueue()
		start(func() error { return workers.Serve(ctx, w) })
	}
	if role == "scheduler" || role == "dev" {
		s, err := d.Scheduler()
		if err != nil {
			return err
		}
		start(func() error { return jobs.Schedule(ctx, s) })
	}
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

// leave stops the heartbeat (stop) and removes the process from the writers of events, once its
// roles have stopped writing.
func leave(ctx context.Context, stop context.CancelFunc, writer *outbox.Dispatcher, beating <-chan struct{}, log *slog.Logger) {
	stop()
	<-beating
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := writer.Leave(ctx); err != nil {
		log.Warn("outbox writer record not removed; the relay will scan once it is stale", "error", err)
	}
}

// flushTimeout bounds the export of the spans left when a process stops.
const flushTimeout = 5 * time.Second

// flushTraces exports the spans left and stops tracing; a collector that is unreachable costs
// those spans, not the clean exit.
func flushTraces(ctx context.Context, stop func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn("spans not exported at shutdown", "error", err)
	}
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// serveHTTP serves the API on ln until ctx ends, then stops accepting and lets in-flight
// requests finish within the shutdown timeout.
func serveHTTP(ctx context.Context, d *app.App, ln net.Listener) error {
	deps, err := d.API()
	if err != nil {
		return err
	}
	return listen(ctx, d, ln, api.NewServer(deps), "api")
}

// listen serves h on ln until ctx ends, then shuts down gracefully.
func listen(ctx context.Context, d *app.App, ln net.Listener, h http.Handler, name string) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// Above api.MaxURL, so that a long URL gets the API's JSON 414 rather than net/http's
		// plain-text 431; headers larger than this still get the 431.
		MaxHeaderBytes: 1 << 20,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	d.Log.Info(name+" listening", "addr", ln.Addr().String())
	select {
	case err := <-served:
		return fmt.Errorf("%s: %w", name, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.Cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("%s shutdown: %w", name, err)
	}
	d.Log.Info(name + " stopped")
	return nil
}
