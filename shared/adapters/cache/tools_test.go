package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/cache"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/tools"
)

// An agent's own tools are read once per process, an empty list included; a tool added,
// changed or removed in one process is seen in the other once the notice reaches it (the TTL,
// an hour, cannot explain it), and another agent's list is not touched.
func TestAgentToolsCachedAndDropped(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	one := cache.Tools(store.NewTools(db), process(t), 100, time.Hour)
	two := cache.Tools(store.NewTools(db), process(t), 100, time.Hour)
	ctx := context.Background()
	all := func(r tools.Repo, bot string) []tools.Tool {
		t.Helper()
		list, err := r.All(ctx, "p", bot)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	for _, bot := range []string{"b1", "b2"} {
		if n := len(all(two, bot)); n != 0 {
			t.Fatalf("%s: %d tools before any was made", bot, n)
		}
	}
	if n := commands(t, func(context.Context) error { all(two, "b1"); return nil }); n != 0 {
		t.Fatalf("a cached list of tools made %d store commands", n)
	}
	tool := tools.Tool{ID: "t1", ProjectID: "p", BotID: "b1", Name: "CRM", Key: "crm", Type: tools.TypeMCP, Status: "ready", CreatedAt: time.Now()}
	if err := one.Insert(ctx, tool); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process sees the tool added", func() bool { return len(all(two, "b1")) == 1 })
	if n := commands(t, func(context.Context) error { all(two, "b2"); return nil }); n != 0 {
		t.Fatalf("another agent's cached list was dropped: %d store commands", n)
	}
	if _, err := one.Set(ctx, "p", "b1", "t1", map[string]any{"disabled": []string{"search"}}); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process sees the tool changed", func() bool {
		list := all(two, "b1")
		return len(list) == 1 && len(list[0].Disabled) == 1
	})
	if err := one.Delete(ctx, "p", "b1", "t1"); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process sees the tool removed", func() bool { return len(all(two, "b1")) == 0 })
}
