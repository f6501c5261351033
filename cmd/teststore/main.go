// Command teststore runs a command beside an embedded store of its own, built without the race
// detector: `make test` runs `go test -race ./...` through it, so the tests' store (FerretDB on
// SQLite) runs at its normal speed while the tests' own code is checked for races. The command finds the store through AGENTPLANE_MONGO_URI and its data directory
// through AGENTPLANE_TEST_STORE_DIR (testenv reads both), its process id through
// AGENTPLANE_TEST_STORE_PID (benchmarks count its CPU); the store stops when the command ends,
// whose exit code teststore exits with.
//
//	teststore go test -race ./...
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/agentplane/agentplane/shared/devenv/devstack"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run runs args beside the store, with the environment and env, and returns its exit code.
func run(args []string, env ...string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: teststore command [args...]")
		return 2
	}
	dir, err := os.MkdirTemp("", "agentplane-teststore-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "teststore:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store, err := devstack.StartMongo(ctx, dir, "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "teststore:", err)
		return 1
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_ = store.Close(stopCtx)
	}()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(append(os.Environ(), env...), "AGENTPLANE_MONGO_URI="+store.URI, devstack.TestStoreDirEnv+"="+dir,
		// The store's process, whose CPU benchmarks measure apart from the service's.
		"AGENTPLANE_TEST_STORE_PID="+strconv.Itoa(os.Getpid()))
	// An interrupt reaches the command (the terminal sends it to both); a termination is passed
	// on. Either way the store stops after the command has.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "teststore:", err)
		return 1
	}
	go func() {
		for s := range signals {
			if s == syscall.SIGTERM {
				_ = cmd.Process.Signal(s)
			}
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "teststore:", err)
		return 1
	}
}
