// Package events is the NATS side of agentplane: the connection, the JetStream stream of domain
// events and (later) the core subjects of run progress.
package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stream is the JetStream stream holding every domain event.
const Stream = "AGENTPLANE_EVENTS"

// SubjectPrefix starts the subject of every domain event: "events.<type>".
const SubjectPrefix = "events."

// Connect dials url. The connection reconnects for ever: a NATS outage never ends the process.
func Connect(url, name string, logger *slog.Logger) (*nats.Conn, error) {
	nc, err := nats.Connect(url,
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("nats disconnected", "error", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
	)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	return nc, nil
}

// Ping checks that the connection is up and the stream answers.
func Ping(ctx context.Context, nc *nats.Conn) error {
	if !nc.IsConnected() {
		return errors.New("not connected")
	}
	return nc.FlushWithContext(ctx)
}

// EnsureStream creates the domain event stream, or brings one of another configuration (an
// earlier version's) to this one. It is idempotent: a stream as configured is left untouched (an
// update, even to the same configuration, races in the server with consumers being created).
func EnsureStream(ctx context.Context, nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cfg := jetstream.StreamConfig{
		Name:        Stream,
		Description: "agentplane domain events",
		Subjects:    []string{SubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      7 * 24 * time.Hour,
		Duplicates:  10 * time.Minute,
	}
	_, err = js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		_, err = js.UpdateStream(ctx, cfg)
	}
	if err != nil {
		return fmt.Errorf("jetstream stream %s: %w", Stream, err)
	}
	return nil
}
