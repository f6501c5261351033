package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/kit/config"
)

// migrate creates MongoDB indexes and the JetStream stream.
func migrate(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	a, err := commandApp("migrate", getenv, stderr)
	if err != nil {
		return err
	}
	defer closeApp(context.WithoutCancel(ctx), a)
	if err := a.Migrate(ctx); err != nil {
		return err
	}
	a.Log.Info("migrated")
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
	a, err := commandApp("accounts", getenv, stderr)
	if err != nil {
		return err
	}
	defer closeApp(context.WithoutCancel(ctx), a)
	acc, key, err := a.Tenancy().CreateAccount(ctx, *name)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "account  %s (%s)\nAPI key  %s\n(the key is shown only now)\n", acc.ID, acc.Name, key)
	return nil
}

// commandApp is the application of a one-off command.
func commandApp(role string, getenv func(string) string, stderr io.Writer) (*app.App, error) {
	cfg, err := config.Load(role, getenv)
	if err != nil {
		return nil, err
	}
	log := newLogger(cfg, stderr)
	conns, err := app.Connect(cfg, log)
	if err != nil {
		return nil, err
	}
	return app.New(cfg, log, conns), nil
}

// closeApp closes the application and its connections.
func closeApp(ctx context.Context, a *app.App) {
	a.Close()
	a.Conns.Close(ctx)
}
