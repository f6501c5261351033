package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/kit/secrets"
)

// devSetup prepares the dev stack for a newcomer: indexes and stream, the dev account, project
// and key, and an admin token. It returns the banner to print once the address is known.
func devSetup(ctx context.Context, a *app.App, stdout io.Writer) (func(addr, smtpAddr string), error) {
	if err := a.Migrate(ctx); err != nil {
		return nil, err
	}
	setup, err := a.Tenancy().EnsureDev(ctx, a.Cfg.DevAPIKey)
	if err != nil {
		return nil, err
	}
	if a.Cfg.SecretsKey == nil {
		if a.Cfg.SecretsKey, err = devSecretsKey(a.Cfg.DataDir); err != nil {
			return nil, err
		}
	}
	if a.Cfg.AdminToken == "" {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		a.Cfg.AdminToken = hex.EncodeToString(b)
	}
	return func(addr, smtpAddr string) {
		base := "http://" + browsable(addr)
		key := setup.APIKey
		keyNote := "(shown once; set AGENTPLANE_DEV_API_KEY to fix it)"
		if key == "" {
			key = "<the key printed on first start>"
			keyNote = "(keys are stored only as hashes; set AGENTPLANE_DEV_API_KEY to fix one)"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\nagentplane dev is running\n\n")
		fmt.Fprintf(&b, "  base URL     %s/v1\n", base)
		fmt.Fprintf(&b, "  API key      %s %s\n", key, keyNote)
		fmt.Fprintf(&b, "  project id   %s\n", setup.Project.ID)
		fmt.Fprintf(&b, "  admin token  %s\n", a.Cfg.AdminToken)
		fmt.Fprintf(&b, "  MongoDB      %s (embedded unless AGENTPLANE_MONGO_URI is set)\n", a.Cfg.MongoURI)
		fmt.Fprintf(&b, "  SMTP         %s (mail to agents at @%s; answers %s)\n", smtpAddr, a.Cfg.MailDomain, relayNote(a.Cfg.SMTPRelay))
		fmt.Fprintf(&b, "  data         %s\n\n", a.Cfg.DataDir)
		fmt.Fprintf(&b, "  try:\n    curl -s %s/v1/projects/%s -H 'Authorization: Bearer %s'\n\n", base, setup.Project.ID, key)
		_, _ = io.WriteString(stdout, b.String())
	}, nil
}

// devSecretsKey is the key dev seals tools' credentials with: kept in the data dir, made on
// first start, so that credentials stored in one run open in the next.
func devSecretsKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, "secrets.key")
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, err
		}
		text = []byte(secrets.NewKey())
		err = os.WriteFile(path, text, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("the secrets key of dev: %w", err)
	}
	key, err := secrets.ParseKey(strings.TrimSpace(string(text)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

// browsable turns a listen address into one a client can dial (":8080" -> "127.0.0.1:8080").
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
