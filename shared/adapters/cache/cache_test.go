package cache_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/cache"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/opcount"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tenancy"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// process is one process's notices, watching the shared NATS server.
func process(t *testing.T) *cache.Notices {
	t.Helper()
	n := cache.NewNotices(testenv.NATS(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
	sub, err := n.Watch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return n
}

// commands returns how many store commands do makes.
func commands(t *testing.T, do func(ctx context.Context) error) int64 {
	t.Helper()
	ctx, n := opcount.With(context.Background())
	if err := do(ctx); err != nil {
		t.Fatal(err)
	}
	return n.Load()
}

// within waits for ok, failing the test when it is not so within d.
func within(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

func TestLoadKeepsValuesAndErrorsAreNotKept(t *testing.T) {
	t.Parallel()
	c := cache.New[string, int](10, time.Hour)
	reads := 0
	read := func(v int, err error) func(context.Context) (int, error) {
		return func(context.Context) (int, error) { reads++; return v, err }
	}
	ctx := context.Background()
	if _, err := c.Load(ctx, "a", read(0, errors.New("down"))); err == nil {
		t.Fatal("the error was not returned")
	}
	for range 3 {
		if v, err := c.Load(ctx, "a", read(7, nil)); err != nil || v != 7 {
			t.Fatalf("load: %d %v", v, err)
		}
	}
	if reads != 2 {
		t.Fatalf("%d reads, want 2 (the error, then one value kept)", reads)
	}
	c.Drop(func(v int) bool { return v == 7 })
	_, _ = c.Load(ctx, "a", read(8, nil))
	if reads != 3 {
		t.Fatalf("a dropped value was served again (%d reads)", reads)
	}
}

// A value read while a drop happens may be what the drop was for: it is returned but not kept.
func TestValueReadAcrossADropIsNotKept(t *testing.T) {
	t.Parallel()
	c := cache.New[string, string](10, time.Hour)
	ctx := context.Background()
	v, _ := c.Load(ctx, "k", func(context.Context) (string, error) {
		c.Drop(func(string) bool { return true }) // the change lands while the old value is read
		return "old", nil
	})
	if v != "old" {
		t.Fatalf("got %q", v)
	}
	v, _ = c.Load(ctx, "k", func(context.Context) (string, error) { return "new", nil })
	if v != "new" {
		t.Fatalf("the value read across the drop was kept: %q", v)
	}
}

func TestEntriesExpire(t *testing.T) {
	t.Parallel()
	c := cache.New[string, int](10, 50*time.Millisecond)
	ctx := context.Background()
	n := 0
	read := func(context.Context) (int, error) { n++; return n, nil }
	_, _ = c.Load(ctx, "k", read)
	within(t, 5*time.Second, "the entry expired", func() bool { v, _ := c.Load(ctx, "k", read); return v > 1 })
}

// A key is read from the store once per process; revoked in one process it stops working there
// at once and in another as the notice reaches it.
func TestRevokedKeyStopsEverywhere(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	one := tenancy.NewService(cache.Tenancy(store.NewTenancy(db), process(t), 100, time.Hour))
	two := tenancy.NewService(cache.Tenancy(store.NewTenancy(db), process(t), 100, time.Hour))
	ctx := context.Background()
	acc, secret, err := one.CreateAccount(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	p, err := one.CreateProject(ctx, acc.ID, "p")
	if err != nil {
		t.Fatal(err)
	}
	var principal tenancy.Principal
	for _, s := range []*tenancy.Service{one, two} {
		if principal, err = s.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Project(ctx, acc.ID, p.ID); err != nil {
			t.Fatal(err)
		}
		if n := commands(t, func(ctx context.Context) error {
			_, err := s.Authenticate(ctx, secret)
			if err == nil {
				_, err = s.Project(ctx, acc.ID, p.ID)
			}
			return err
		}); n != 0 {
			t.Fatalf("a cached key and project made %d store commands", n)
		}
	}
	if _, err := two.Project(ctx, "another-account", p.ID); apperr.As(err).Code != "project_not_found" {
		t.Fatalf("another account's project through the cache: %v", err)
	}
	if err := one.RevokeKey(ctx, acc.ID, principal.KeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := one.Authenticate(ctx, secret); apperr.As(err).Code != "invalid_api_key" {
		t.Fatalf("the revoking process still accepts the key: %v", err)
	}
	within(t, 5*time.Second, "the other process refuses the revoked key", func() bool {
		_, err := two.Authenticate(ctx, secret)
		return apperr.As(err).Code == "invalid_api_key"
	})
}

// An agent is read once per process; updated or deleted in one process, the other reads the
// change as the notice reaches it.
func TestChangedAgentDroppedEverywhere(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	one := cache.Agents(store.NewAgents(db), process(t), 100, time.Hour)
	two := cache.Agents(store.NewAgents(db), process(t), 100, time.Hour)
	ctx := context.Background()
	b := agents.Bot{ID: "b1", UUID: "u1", ProjectID: "p", Name: "Before", Subdomain: "before-1"}
	if err := one.Insert(ctx, b, outbox.New(ctx, outbox.BotCreated, "p", b.ID, b)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []agents.Repo{one, two} {
		if _, err := r.Get(ctx, "p", "u1"); err != nil {
			t.Fatal(err)
		}
		if n := commands(t, func(ctx context.Context) error { _, err := r.Get(ctx, "p", "u1"); return err }); n != 0 {
			t.Fatalf("a cached agent made %d store commands", n)
		}
	}
	if _, err := two.Get(ctx, "another-project", "u1"); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("another project's agent through the cache: %v", err)
	}
	b.Name, b.Rev = "After", 1
	if err := one.Replace(ctx, b, outbox.New(ctx, outbox.BotUpdated, "p", b.ID, b)); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process reads the update", func() bool {
		got, err := two.Get(ctx, "p", "u1")
		return err == nil && got.Name == "After"
	})
	// The other process holds the agent by project and uuid (read just now) and by id alone.
	if _, err := two.Find(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	for _, read := range []func(ctx context.Context) error{
		func(ctx context.Context) error { _, err := two.Get(ctx, "p", "u1"); return err },
		func(ctx context.Context) error { _, err := two.Find(ctx, "b1"); return err },
	} {
		if n := commands(t, read); n != 0 {
			t.Fatalf("a cached agent made %d store commands", n)
		}
	}
	if err := one.Delete(ctx, b, time.Now(), outbox.New(ctx, outbox.BotDeleted, "p", b.ID, b)); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process finds the agent deleted", func() bool {
		_, byUUID := two.Get(ctx, "p", "u1")
		_, byID := two.Find(ctx, "b1")
		return apperr.As(byUUID).Kind == apperr.NotFound && apperr.As(byID).Kind == apperr.NotFound
	})
}

// A project's stages are read once per process, and what a caller does to the stages it is given
// does not reach the cache; a stage renamed in one process is read renamed in the other.
func TestStagesCachedAndDropped(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	one := cache.CRM(store.NewCRM(db), process(t), 100, time.Hour)
	two := cache.CRM(store.NewCRM(db), process(t), 100, time.Hour)
	ctx := context.Background()
	defaults := []crm.Stage{{UUID: "s1", ProjectID: "p", Name: "Lead", SortOrder: 1}, {UUID: "s2", ProjectID: "p", Name: "Won", SortOrder: 2}}
	for _, r := range []crm.Repo{one, two} {
		got, err := r.EnsureStages(ctx, defaults)
		if err != nil || len(got) != 2 {
			t.Fatalf("stages %v %v", got, err)
		}
		got[0].Name = "changed by a caller"
		if n := commands(t, func(ctx context.Context) error {
			got, err := r.EnsureStages(ctx, defaults)
			if err == nil && got[0].Name != "Lead" {
				t.Errorf("a caller's change reached the cache: %q", got[0].Name)
			}
			return err
		}); n != 0 {
			t.Fatalf("cached stages made %d store commands", n)
		}
	}
	renamed := defaults[0]
	renamed.Name = "Prospect"
	if err := one.ReplaceStage(ctx, renamed, outbox.New(ctx, outbox.StageUpdated, "p", "", renamed)); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process reads the renamed stage", func() bool {
		got, err := two.EnsureStages(ctx, defaults)
		return err == nil && got[0].Name == "Prospect"
	})
}

func TestSizeZeroCachesNothing(t *testing.T) {
	t.Parallel()
	repo := store.NewTenancy(testenv.Mongo(t))
	if got := cache.Tenancy(repo, process(t), 0, time.Minute); got != tenancy.Repo(repo) {
		t.Fatal("with no entries allowed the repo is still wrapped")
	}
}
