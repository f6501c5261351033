package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/cache"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// Which workflows an event type triggers is read once per process, an empty list included; a
// workflow created, paused or deleted in one process is seen in the other once the notice
// reaches it (the TTL, an hour, cannot explain it), and another agent's list is not touched.
func TestTriggeredWorkflowsCachedAndDropped(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	one := cache.Workflows(store.NewWorkflows(db), process(t), 100, time.Hour)
	two := cache.Workflows(store.NewWorkflows(db), process(t), 100, time.Hour)
	ctx := context.Background()
	triggered := func(r workflows.Repo, bot string) int {
		t.Helper()
		list, err := r.Triggered(ctx, "p", bot, "deal.updated")
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	for _, bot := range []string{"b1", "b2"} {
		if n := triggered(two, bot); n != 0 {
			t.Fatalf("%s: %d workflows before any was made", bot, n)
		}
	}
	if n := commands(t, func(context.Context) error { triggered(two, "b1"); return nil }); n != 0 {
		t.Fatalf("a cached list of triggered workflows made %d store commands", n)
	}
	w := workflows.Workflow{UUID: "w1", ProjectID: "p", BotID: "b1", Name: "Hook", IsActive: true,
		Definition: workflows.Definition{TriggerType: workflows.TriggerTypeEvent, TriggerEvent: "deal.updated"}}
	if err := one.Insert(ctx, w, outbox.New(ctx, outbox.WorkflowCreated, "p", "b1", w)); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process sees the workflow created", func() bool { return triggered(two, "b1") == 1 })
	if n := commands(t, func(context.Context) error { triggered(two, "b2"); return nil }); n != 0 {
		t.Fatalf("another agent's cached list was dropped: %d store commands", n)
	}
	w.IsActive, w.Rev = false, 1
	if err := one.Replace(ctx, w, outbox.New(ctx, outbox.WorkflowUpdated, "p", "b1", w)); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process sees the workflow paused", func() bool { return triggered(two, "b1") == 0 })
	w.IsActive, w.Rev = true, 2
	if err := one.Replace(ctx, w, outbox.New(ctx, outbox.WorkflowUpdated, "p", "b1", w)); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process sees the workflow active again", func() bool { return triggered(two, "b1") == 1 })
	if err := one.Delete(ctx, w, time.Now(), outbox.New(ctx, outbox.WorkflowDeleted, "p", "b1", w)); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process sees the workflow deleted", func() bool { return triggered(two, "b1") == 0 })
}
