package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/opcount"
)

// Ended runs leave the live executions for the finished ones in three store commands however
// many they are; a run still under way, one waiting for an approval and an id that is no run
// stay as they are, and a run copied already by a move a crash cut short is moved all the same.
func TestFinishAllMovesEndedRunsInThreeCommands(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	ctx := context.Background()
	repo := store.NewExecutions(db)
	statuses := map[string]string{"done1": agentruns.StatusDone, "done2": agentruns.StatusDone, "failed": agentruns.StatusFailed,
		"copied": agentruns.StatusDone, "running": agentruns.StatusRunning, "waiting": agentruns.StatusApproval}
	for id, status := range statuses {
		if err := repo.Insert(ctx, agentruns.Execution{ID: id, ProjectID: "p", BotID: "b", Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Collection("executions_finished").InsertOne(ctx, agentruns.Execution{ID: "copied", ProjectID: "p", BotID: "b", Status: agentruns.StatusDone}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"done1", "done2", "failed", "copied", "running", "waiting", "absent"}
	cctx, n := opcount.With(ctx)
	if err := repo.FinishAll(cctx, ids); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Fatalf("moving four ended runs made %d store commands, want 3", n.Load())
	}
	where := func(coll string) []string {
		var docs []struct {
			ID string `bson:"_id"`
		}
		cur, err := db.Collection(coll).Find(ctx, map[string]any{})
		if err == nil {
			err = cur.All(ctx, &docs)
		}
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range docs {
			out = append(out, d.ID)
		}
		slices.Sort(out)
		return out
	}
	if live, want := where("executions"), []string{"running", "waiting"}; !slices.Equal(live, want) {
		t.Fatalf("live runs %v, want %v", live, want)
	}
	if finished, want := where("executions_finished"), []string{"copied", "done1", "done2", "failed"}; !slices.Equal(finished, want) {
		t.Fatalf("finished runs %v, want %v", finished, want)
	}
	for _, id := range []string{"done1", "copied", "running"} {
		if e, err := repo.Get(ctx, "p", "b", id); err != nil || e.Status != statuses[id] {
			t.Fatalf("%s read back as %+v, %v", id, e, err)
		}
	}
}
