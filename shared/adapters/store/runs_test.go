package store_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/opcount"
)

// Runs that end leave the live executions for the finished ones just after, moved in batches off
// their runs' path; the scheduler's sweep moves those a stopped worker left, including one whose
// copy was made before the stop, in one command of each kind.
func TestEndedRunsMoveToTheFinishedOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(testenv.MongoURI(), testenv.NewName(), store.NewCommands("worker"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop(context.Background()); _ = db.Client().Disconnect(context.Background()) })
	repo := store.NewExecutions(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		if err := repo.Insert(ctx, agentruns.Execution{ID: id, ProjectID: "p", BotID: "b", Status: agentruns.StatusQueued, CreatedAt: now,
			Log: []agentruns.Entry{}, Cycles: []agentruns.Cycle{}}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := repo.Claim(ctx, id, "w", now.Add(time.Minute), now); err != nil || !ok {
			t.Fatalf("claim of %s: %v %v", id, ok, err)
		}
	}
	for id, status := range map[string]string{"r1": agentruns.StatusDone, "r2": agentruns.StatusFailed, "r3": agentruns.StatusDone} {
		ok, err := repo.Advance(ctx, id, "w", 0, agentruns.Change{Set: map[string]any{"status": status, "owner": ""},
			Log: []agentruns.Entry{{Seq: 1, Event: agentruns.EventDone}}, End: true})
		if err != nil || !ok {
			t.Fatalf("end of %s: %v %v", id, ok, err)
		}
	}
	ids := func(coll string) []string {
		t.Helper()
		cur, err := db.Collection(coll).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		var docs []struct {
			ID  string `bson:"_id"`
			Log []agentruns.Entry
		}
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range docs {
			if coll == "executions_finished" && d.ID[0] == 'r' && len(d.Log) != 1 {
				t.Fatalf("%s moved without its last change: %+v", d.ID, d)
			}
			out = append(out, d.ID)
		}
		slices.Sort(out)
		return out
	}
	// A batch copies its runs and then deletes them: the move is over when both are seen.
	moved := func() bool {
		return slices.Equal(ids("executions_finished"), []string{"r1", "r2", "r3"}) && slices.Equal(ids("executions"), []string{"r4"})
	}
	for deadline := time.Now().Add(10 * time.Second); !moved(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("finished %v, live %v: want the ended runs moved and the run under way alone left", ids("executions_finished"), ids("executions"))
		}
	}

	// A worker stopped before moving s1 and s2, the latter after copying it.
	for _, id := range []string{"s1", "s2"} {
		if _, err := db.Collection("executions").InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "status", Value: agentruns.StatusDone}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Collection("executions_finished").InsertOne(ctx, bson.D{{Key: "_id", Value: "s2"}, {Key: "status", Value: agentruns.StatusDone}}); err != nil {
		t.Fatal(err)
	}
	swept, commands := opcount.With(ctx)
	if n, err := repo.MoveEnded(swept, 500); err != nil || n != 2 || commands.Load() != 3 {
		t.Fatalf("the sweep moved %d in %d store commands, want 2 in 3 (find, insert, delete): %v", n, commands.Load(), err)
	}
	if finished, live := ids("executions_finished"), ids("executions"); !slices.Equal(finished, []string{"r1", "r2", "r3", "s1", "s2"}) || !slices.Equal(live, []string{"r4"}) {
		t.Fatalf("after the sweep, finished %v and live %v", finished, live)
	}
	if n, err := repo.MoveEnded(ctx, 500); err != nil || n != 0 {
		t.Fatalf("a second sweep moved %d: %v", n, err)
	}
	var e agentruns.Execution
	if err := db.Collection("executions").FindOne(ctx, bson.D{{Key: "_id", Value: "r4"}}).Decode(&e); err != nil || e.Status != agentruns.StatusRunning {
		t.Fatalf("the run under way: %+v %v", e, err)
	}
}
