package devstack

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

// Mongo is an embedded MongoDB-wire-compatible store: FerretDB on SQLite, listening on loopback
// behind a proxy that makes its updates of a document atomic (serializer).
type Mongo struct {
	URI   string
	dir   string
	stop  context.CancelFunc
	done  chan struct{}
	proxy *serializer
}

// sqlitePragmas are the SQLite settings of the embedded store, besides FerretDB's own
// (busy_timeout, WAL). synchronous=NORMAL: in WAL mode a commit no longer waits for an fsync
// (the WAL is synced at checkpoints), so SQLite's single writer holds its lock for much less
// time per write. A committed write survives the process crashing; one of the last writes before
// the machine itself loses power may be lost (the database stays consistent). Measured with
// BenchmarkChat at 16 clients, the p99 fell from 1.3 s to 0.38 s (docs/BENCHMARKS.md).
const sqlitePragmas = "_pragma=synchronous(normal)"

// StartMongo starts FerretDB with its SQLite backend keeping data under dir, reached at addr
// (for example "127.0.0.1:0" for a free port) through the serializer.
func StartMongo(ctx context.Context, dir, addr string, logger *slog.Logger) (*Mongo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("mongo data dir: %w", err)
	}
	installBusyWait()
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    slog.New(lazyAttrs{Handler: logger.Handler()}),
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/?" + sqlitePragmas,
	})
	if err != nil {
		return nil, fmt.Errorf("start embedded mongo: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &Mongo{dir: abs, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		_ = f.Run(runCtx)
	}()
	backend, err := url.Parse(f.MongoDBURI())
	if err != nil {
		cancel()
		<-m.done
		return nil, fmt.Errorf("embedded mongo: %w", err)
	}
	if m.proxy, err = startSerializer(addr, backend.Host, abs); err != nil {
		cancel()
		<-m.done
		return nil, err
	}
	m.URI = "mongodb://" + m.proxy.ln.Addr().String() + "/"
	return m, nil
}

// IndexIDs gives every collection of database an index SQLite can use for lookups by _id.
// FerretDB 1.24 builds its _id index on `_ferretdb_sjson->"_id"` but filters on
// `_ferretdb_sjson->'$._id'`, so without this index every query, even by _id, reads the whole
// table. Call it after the collections exist (after store.Migrate); it is idempotent.
func (m *Mongo) IndexIDs(ctx context.Context, database string) error {
	return IndexIDs(ctx, m.dir, database)
}

// TestStoreDirEnv names the variable that gives tests the data directory of an embedded store
// started for them in another process (cmd/teststore), for IndexIDs.
const TestStoreDirEnv = "AGENTPLANE_TEST_STORE_DIR"

// IndexIDs is Mongo.IndexIDs for the embedded store keeping its data under dir, which may run in
// another process.
func IndexIDs(ctx context.Context, dir, database string) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, database+".sqlite")+"?mode=rw&_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)")
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM "_ferretdb_collections"`)
	if err != nil {
		return fmt.Errorf("embedded mongo tables of %s: %w", database, err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			_ = rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (_ferretdb_sjson->'$._id')`, t+"_id_lookup", t)); err != nil {
			return fmt.Errorf("embedded mongo _id index of %s: %w", t, err)
		}
	}
	return nil
}

// Close stops the store and waits until its files are closed, at most until ctx ends.
func (m *Mongo) Close(ctx context.Context) error {
	m.proxy.close()
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

// lazyAttrs is a log handler that formats the attributes added with With only when a record is
// logged. FerretDB adds every SQL statement's arguments (whole documents) to its logger, around
// each statement, for a debug line: the text and JSON handlers format attributes as they are
// added, which took 15% of the CPU of ingesting a 220 KB source (BenchmarkIngest) with debug off.
type lazyAttrs struct {
	slog.Handler
	attrs []slog.Attr
}

func (h lazyAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return lazyAttrs{Handler: h.Handler, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h lazyAttrs) WithGroup(name string) slog.Handler {
	return lazyAttrs{Handler: h.resolved().WithGroup(name)}
}

func (h lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return h.resolved().Handle(ctx, r)
}

// resolved is the handler with the attributes added so far.
func (h lazyAttrs) resolved() slog.Handler {
	if len(h.attrs) == 0 {
		return h.Handler
	}
	return h.Handler.WithAttrs(h.attrs)
}
