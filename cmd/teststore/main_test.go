package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/devenv/devstack"
)

func TestMain(m *testing.M) {
	if out := os.Getenv("TESTSTORE_CHILD"); out != "" {
		os.Exit(child(out))
	}
	os.Exit(m.Run())
}

// The command teststore runs finds the store and its data directory in its environment, can
// write to it, and its exit code is teststore's; the store's data is gone afterwards.
func TestCommandRunsBesideTheStore(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dir")
	code := run([]string{os.Args[0]}, "TESTSTORE_CHILD="+out)
	if code != 3 {
		t.Fatalf("teststore exited %d, want the command's 3", code)
	}
	dir, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the command did not reach the store: %v", err)
	}
	if _, err := os.Stat(string(dir)); !os.IsNotExist(err) {
		t.Fatalf("the store's data directory %s is left: %v", dir, err)
	}
	if code := run([]string{"false"}); code != 1 {
		t.Fatalf("teststore exited %d after false, want 1", code)
	}
	if code := run([]string{filepath.Join(t.TempDir(), "missing")}); code != 1 {
		t.Fatalf("teststore exited %d for a missing command, want 1", code)
	}
}

// child is teststore's command in TestCommandRunsBesideTheStore: it writes a document, gives the
// collection its _id index through the data directory, names the directory in the file out, and
// exits 3 (10 when a step fails).
func child(out string) int {
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(os.Getenv("AGENTPLANE_MONGO_URI")))
	if err == nil {
		defer client.Disconnect(ctx)
		_, err = client.Database("child").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}})
	}
	dir := os.Getenv(devstack.TestStoreDirEnv)
	if err == nil {
		err = devstack.Reindex(ctx, dir, "child")
	}
	if err == nil {
		err = os.WriteFile(out, []byte(dir), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 10
	}
	return 3
}
