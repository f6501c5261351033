// Command agentplane is the whole service: one binary, several roles.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // time zones for calendars and schedules, also where the image has no tzdata

	"github.com/redis/go-redis/v9"
)

const usage = `usage: agentplane <command>

roles:
  api          HTTP API
  worker       asynq worker (agent runs, ingestion, workflows, webhooks)
  scheduler    cron schedules that enqueue periodic work
  dev          all roles in one process, on an embedded stack when no URLs are set

commands:
  migrate                   create MongoDB indexes and the JetStream stream
  accounts create --name N  create an account; prints its API key once
  load --key K [--base URL] [--clients N] [--duration D]
                            hold a mixed workload against a running service and report it
  eval --dataset FILE --agent ID [--against published] [--min grader=rate]
                            run eval cases against an agent's draft and another version of a
                            deployment (AGENTPLANE_URL, AGENTPLANE_API_KEY); exits 1 on a regression

configuration: AGENTPLANE_* environment variables (see docs/configuration.md)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// go-redis logs through a package global: set it once, here, and not in run.
	redis.SetLogger(redisLogger{slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "redis")})
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "agentplane:", err)
		os.Exit(1)
	}
}

// run is the program: main and the tests call it the same way.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command given")
	}
	switch args[0] {
	case "api", "worker", "scheduler", "dev":
		return serve(ctx, args[0], getenv, stdout, stderr)
	case "migrate":
		return migrate(ctx, getenv, stderr)
	case "accounts":
		return accounts(ctx, args[1:], getenv, stdout, stderr)
	case "load":
		return load(ctx, args[1:], stdout, stderr)
	case "eval":
		return evalCommand(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
