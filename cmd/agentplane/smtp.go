package main

import (
	"context"
	"fmt"
	"net"

	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/adapters/mail"
	"github.com/agentplane/agentplane/shared/kit/config"
)

// smtpListenAddr is where the SMTP listener of agents' inboxes listens: AGENTPLANE_SMTP_ADDR,
// else, in dev, a free loopback port; "" when it is off.
func smtpListenAddr(cfg config.Config) string {
	if cfg.SMTPAddr == "" && cfg.Role == "dev" {
		return "127.0.0.1:0"
	}
	return cfg.SMTPAddr
}

// listenSMTP makes the SMTP listener and listens on addr.
func listenSMTP(d *app.App, addr string) (*mail.Server, net.Listener, error) {
	srv, err := d.SMTP()
	if err != nil {
		return nil, nil, err
	}
	ln, err := srv.Listen(addr)
	return srv, ln, err
}

// serveSMTP takes mail on ln until ctx ends, then lets the conversations under way finish
// within the shutdown timeout (a message not yet acknowledged is sent again by its sender).
func serveSMTP(ctx context.Context, d *app.App, srv *mail.Server, ln net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	d.Log.Info("smtp listening", "addr", ln.Addr().String(), "domain", d.Cfg.MailDomain)
	select {
	case err := <-served:
		return fmt.Errorf("smtp: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.Cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("smtp shutdown: %w", err)
	}
	d.Log.Info("smtp stopped")
	return nil
}

// relayNote says where answers go, without the relay's credentials.
func relayNote(relay string) string {
	if relay == "" {
		return "kept unsent: set AGENTPLANE_SMTP_RELAY to send them"
	}
	return "sent through AGENTPLANE_SMTP_RELAY"
}
