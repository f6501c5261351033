package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/outbox"
)

// A document is named by its id or its uuid, within its project: each form is looked for as
// itself (by _id, by uuid), and a name of neither form by both, so a document whose _id was
// not minted as an ObjectID is still found.
func TestNamedByIDOrUUID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	repo := store.NewAgents(db)
	minted := agents.Bot{ID: ids.ObjectID(), UUID: ids.New(), ProjectID: "p", Name: "minted", Subdomain: "minted"}
	legacy := agents.Bot{ID: "legacy-agent", UUID: "legacy-uuid", ProjectID: "p", Name: "legacy", Subdomain: "legacy"}
	for _, b := range []agents.Bot{minted, legacy} {
		if err := repo.Insert(ctx, b, outbox.New(ctx, outbox.BotCreated, b.ProjectID, b.ID, map[string]string{"id": b.ID})); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		project, name, want string
	}{
		{"p", minted.ID, "minted"},
		{"p", minted.UUID, "minted"},
		{"p", legacy.ID, "legacy"},
		{"p", legacy.UUID, "legacy"},
		{"q", minted.ID, ""},
		{"q", minted.UUID, ""},
		{"p", strings.ToUpper(minted.ID), ""},
		{"p", ids.ObjectID(), ""},
		{"p", ids.New(), ""},
	} {
		b, err := repo.Get(ctx, tt.project, tt.name)
		switch {
		case tt.want == "" && !apperr.IsNotFound(err):
			t.Errorf("Get(%q, %q) = %q, %v; want not found", tt.project, tt.name, b.Name, err)
		case tt.want != "" && (err != nil || b.Name != tt.want):
			t.Errorf("Get(%q, %q) = %q, %v; want %q", tt.project, tt.name, b.Name, err, tt.want)
		}
		if tt.project != "p" {
			continue
		}
		b, err = repo.Find(ctx, tt.name)
		if (tt.want == "" && !apperr.IsNotFound(err)) || (tt.want != "" && (err != nil || b.Name != tt.want)) {
			t.Errorf("Find(%q) = %q, %v; want %q", tt.name, b.Name, err, tt.want)
		}
	}
}
