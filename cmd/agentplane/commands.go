package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/agentplane/agentplane/shared/kit/config"
)

// migrate creates MongoDB indexes and the JetStream stream.
func migrate(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	d, err := commandDeps("migrate", getenv, stderr)
	if err != nil {
		return err
	}
	defer d.close(context.WithoutCancel(ctx))
	if err := d.migrate(ctx); err != nil {
		return err
	}
	d.log.Info("migrated")
	return nil
}

// accounts runs "accounts create --name N".
func accounts(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: agentplane accounts create --name NAME")
	}
	fs := flag.NewFlagSet("accounts create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "account name")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	d, err := commandDeps("accounts", getenv, stderr)
	if err != nil {
		return err
	}
	defer d.close(context.WithoutCancel(ctx))
	a, key, err := d.tenancy().CreateAccount(ctx, *name)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "account  %s (%s)\nAPI key  %s\n(the key is shown only now)\n", a.ID, a.Name, key)
	return nil
}

func commandDeps(role string, getenv func(string) string, stderr io.Writer) (*deps, error) {
	cfg, err := config.Load(role, getenv)
	if err != nil {
		return nil, err
	}
	return connect(cfg, newLogger(cfg, stderr))
}
