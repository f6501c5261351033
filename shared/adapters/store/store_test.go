package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/opcount"
	"github.com/agentplane/agentplane/shared/tenancy"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t) // migrated once already
	for range 2 {
		if err := store.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
	}
}

// The collections with no index of their own exist once migrated, before their first write: the
// embedded store's _id lookup indexes are made then (without one, a read by _id reads the whole
// collection).
func TestMigrateCreatesUnindexedCollections(t *testing.T) {
	t.Parallel()
	names, err := testenv.Mongo(t).ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "source_texts") {
		t.Fatalf("collections %v, want source_texts among them", names)
	}
}

func TestKeyHashesAreUnique(t *testing.T) {
	t.Parallel()
	repo := store.NewTenancy(testenv.Mongo(t))
	ctx := context.Background()
	k := tenancy.Key{ID: "k1", AccountID: "a", Hash: "h", CreatedAt: time.Now()}
	if err := repo.InsertKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	k.ID = "k2"
	if err := repo.InsertKey(ctx, k); apperr.As(err).Kind != apperr.Conflict {
		t.Fatalf("second key with the same hash: %v, want a conflict", err)
	}
}

func TestRepoScopesByAccount(t *testing.T) {
	t.Parallel()
	repo := store.NewTenancy(testenv.Mongo(t))
	ctx := context.Background()
	if err := repo.InsertProject(ctx, tenancy.Project{ID: "p", AccountID: "a", Name: "n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Project(ctx, "b", "p"); apperr.As(err).Code != "project_not_found" {
		t.Fatalf("another account's project: %v", err)
	}
	if err := repo.InsertKey(ctx, tenancy.Key{ID: "k", AccountID: "a", Hash: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := repo.RevokeKey(ctx, "b", "k", time.Now()); apperr.As(err).Code != "key_not_found" {
		t.Fatalf("revoking another account's key: %v", err)
	}
}

func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	db, err := store.Open("mongodb://127.0.0.1:1/?connectTimeoutMS=200", "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = store.NewTenancy(db).Project(ctx, "a", "p")
	if e := apperr.As(err); e.Kind != apperr.Unavailable {
		t.Fatalf("got %v, want an Unavailable error", err)
	}
}

// Every command a piece of work sends is counted for it (opcount) and by command and collection
// in the process's metric; the driver's own handshakes are not.
func TestCommandsAreCounted(t *testing.T) {
	t.Parallel()
	commands := store.NewCommands("api")
	db, err := store.Open(testenv.MongoURI(), testenv.NewName(), commands)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop(context.Background()); _ = db.Client().Disconnect(context.Background()) })
	ctx, n := opcount.With(context.Background())
	repo := store.NewTenancy(db)
	if err := repo.InsertProject(ctx, tenancy.Project{ID: "p", AccountID: "a", Name: "n"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := repo.Project(ctx, "a", "p"); err != nil {
			t.Fatal(err)
		}
	}
	if n.Load() != 3 {
		t.Fatalf("the work counted %d commands, want 3", n.Load())
	}
	const want = `# HELP agentplane_store_commands_total Commands sent to the store (each a round trip on MongoDB), by command, collection and role.
# TYPE agentplane_store_commands_total counter
agentplane_store_commands_total{collection="projects",command="find",role="api"} 2
agentplane_store_commands_total{collection="projects",command="insert",role="api"} 1
`
	if err := testutil.CollectAndCompare(commands, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
