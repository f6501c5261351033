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

// Reindex gives every collection of database the SQLite indexes FerretDB 1.24 can use and only
// those. FerretDB reads by an index only for a filter of exactly {_id}, which it writes as
// `_ferretdb_sjson->'$._id'`, while it builds its own _id index on `_ferretdb_sjson->"_id"` (the
// same value, another expression, so SQLite never picks it) and an SQLite index for every index
// the service creates, none of which any of its queries reads. Every write of a document still
// keeps each of them, extracting its key from the document's JSON text (a chat's tens of KB,
// for its four other indexes). So each collection gets one unique index on the expression FerretDB
// filters on, which enforces what its _id index did (FerretDB reports a unique constraint of
// either as a duplicate _id), and loses FerretDB's _id index and the non-unique indexes; unique
// ones stay, as they enforce the service's constraints. The indexes stay in FerretDB's catalogue:
// listIndexes names them and createIndexes of them again does nothing. Call it after the
// collections exist (after store.Migrate); it is idempotent.
func (m *Mongo) Reindex(ctx context.Context, database string) error {
	return Reindex(ctx, m.dir, database)
}

// TestStoreDirEnv names the variable that gives tests the data directory of an embedded store
// started for them in another process (cmd/teststore), for Reindex.
const TestStoreDirEnv = "AGENTPLANE_TEST_STORE_DIR"

// Reindex is Mongo.Reindex for the embedded store keeping its data under dir, which may run in
// another process.
func Reindex(ctx context.Context, dir, database string) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, database+".sqlite")+"?mode=rw&_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)")
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := column(ctx, db, `SELECT table_name FROM "_ferretdb_collections"`)
	if err != nil {
		return fmt.Errorf("embedded mongo tables of %s: %w", database, err)
	}
	for _, t := range tables {
		if err := reindex(ctx, db, t); err != nil {
			return fmt.Errorf("embedded mongo indexes of %s: %w", t, err)
		}
	}
	return nil
}

// reindex gives table its unique _id lookup index and drops the others FerretDB never reads.
func reindex(ctx context.Context, db *sql.DB, table string) error {
	lookup := table + "_id_lookup"
	unique, err := column(ctx, db, `SELECT name FROM pragma_index_list(?) WHERE "unique" = 1`, table)
	if err != nil {
		return err
	}
	if !slices.Contains(unique, lookup) {
		// A lookup index made before it was unique goes first.
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DROP INDEX IF EXISTS %q`, lookup)); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE UNIQUE INDEX %q ON %q (_ferretdb_sjson->'$._id')`, lookup, table)); err != nil {
			return err
		}
	}
	unread, err := column(ctx, db, `SELECT name FROM pragma_index_list(?) WHERE origin = 'c' AND ("unique" = 0 OR name = ?)`, table, table+"__id_")
	if err != nil {
		return err
	}
	for _, name := range unread {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DROP INDEX %q`, name)); err != nil {
			return err
		}
	}
	return nil
}

// column returns the one column of query's rows.
func column(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	return out, errors.Join(rows.Err(), rows.Close())
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
