// Package testenv gives test packages real servers: a MongoDB-compatible store (the embedded
// FerretDB, or AGENTPLANE_MONGO_URI), Redis (AGENTPLANE_REDIS_URL, or a redis-server it starts)
// and an in-process NATS server with JetStream.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/devstack"
)

var servers struct {
	mongoURI, redisURL, natsURL string
	// mongo is the embedded store, nil when AGENTPLANE_MONGO_URI names one.
	mongo *devstack.Mongo
	// storeDir is the data directory of the embedded store AGENTPLANE_MONGO_URI names when
	// cmd/teststore started it for the tests, else "".
	storeDir string
}

// Main starts the servers, runs the package's tests and stops the servers. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// ParallelPerCore runs the package's parallel tests n per core unless -parallel says otherwise
// (the default is one per core), for packages whose tests spend much of their time waiting with
// their core idle: on a worker's turn, a lease to expire, the store's process, an event. Call it
// from TestMain, before Main.
func ParallelPerCore(n int) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(n*runtime.GOMAXPROCS(0)))
	}
}

func run(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentplane-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	servers.mongoURI = os.Getenv("AGENTPLANE_MONGO_URI")
	servers.storeDir = os.Getenv(devstack.TestStoreDirEnv)
	if servers.mongoURI == "" {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		mg, err := devstack.StartMongo(ctx, dir+"/mongo", "127.0.0.1:0", quiet)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv: embedded mongo:", err)
			return 1
		}
		defer mg.Close(ctx)
		servers.mongoURI, servers.mongo = mg.URI, mg
	}
	servers.redisURL = os.Getenv("AGENTPLANE_REDIS_URL")
	if servers.redisURL == "" {
		r, err := devstack.StartRedisServer(ctx, dir+"/redis", 0, false)
		if errors.Is(err, devstack.ErrNoRedisServer) {
			fmt.Fprintln(os.Stderr, "testenv: tests need a real Redis: set AGENTPLANE_REDIS_URL, or install redis-server:", err)
			return 1
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testenv: redis:", err)
			return 1
		}
		defer r.Close()
		servers.redisURL = r.URL
	}
	ns, err := devstack.StartNATS(dir+"/nats", 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	defer ns.Close()
	servers.natsURL = ns.URL
	return m.Run()
}

// MongoURI is the store's connection string.
func MongoURI() string { return servers.mongoURI }

// RedisURL is the Redis server's URL.
func RedisURL() string { return servers.redisURL }

// NATSURL is the NATS server's URL.
func NATSURL() string { return servers.natsURL }

// Mongo returns a fresh, migrated database of its own for t, dropped when t ends.
func Mongo(t testing.TB) *mongo.Database {
	t.Helper()
	db, err := store.Open(servers.mongoURI, NewName(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Prepare(ctx, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = db.Drop(ctx)
		_ = db.Client().Disconnect(ctx)
	})
	return db
}

// Prepare migrates db and, on the embedded store, gives its collections the indexes FerretDB
// reads (devstack.Reindex).
func Prepare(ctx context.Context, db *mongo.Database) error {
	if err := store.Migrate(ctx, db); err != nil {
		return err
	}
	switch {
	case servers.mongo != nil:
		return servers.mongo.Reindex(ctx, db.Name())
	case servers.storeDir != "":
		return db.RunCommand(ctx, bson.D{{Key: devstack.ReindexCommand, Value: 1}}).Err()
	}
	return nil
}

// Redis returns a client of the Redis server, closed when t ends. Tests share the server: use
// keys of your own.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(servers.redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// NATS returns a connection to the NATS server, closed when t ends.
func NATS(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(servers.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// NewName returns a fresh name for a test's own resources (databases, projects, consumers).
func NewName() string { return "t" + randomHex(6) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
