package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// Mongo is an embedded MongoDB-wire-compatible store: FerretDB on SQLite, listening on loopback.
type Mongo struct {
	URI  string
	stop context.CancelFunc
	done chan struct{}
}

// StartMongo starts FerretDB with its SQLite backend keeping data under dir, listening on addr
// (for example "127.0.0.1:0" for a free port).
func StartMongo(ctx context.Context, dir, addr string, logger *slog.Logger) (*Mongo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("mongo data dir: %w", err)
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: addr},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
	})
	if err != nil {
		return nil, fmt.Errorf("start embedded mongo: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Mongo{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		_ = f.Run(runCtx)
	}()
	m.URI = f.MongoDBURI()
	return m, nil
}

// Close stops the store and waits until its files are closed, at most until ctx ends.
func (m *Mongo) Close(ctx context.Context) error {
	m.stop()
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return fmt.Errorf("embedded mongo did not stop in 30s")
	}
}
