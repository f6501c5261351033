package agents_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/devenv/eventstest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func service(t *testing.T) *agents.Service {
	t.Helper()
	s, _ := serviceOf(t)
	return s
}

// serviceOf is service and its database.
func serviceOf(t *testing.T) (*agents.Service, *mongo.Database) {
	t.Helper()
	db := testenv.Mongo(t)
	if err := store.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	pub, _ := eventstest.Stream(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return agents.NewService(store.NewAgents(db), store.NewVersions(db), outbox.NewDispatcher(pub, store.NewOutbox(db), log, func(string) {}), agents.Hosts{}), db
}

func ptr[T any](v T) *T { return &v }

func num(n int64) flex.OptInt { return flex.OptInt{Set: true, Value: flex.Int(n)} }

func flag(n int64) flex.OptFlag { return flex.OptFlag{OptInt: num(n)} }

// wantInvalid checks err is Invalid about field.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	e := apperr.As(err)
	if err == nil || e.Kind != apperr.Invalid {
		t.Fatalf("error %v, want an Invalid one about %s", err, field)
	}
	for _, d := range e.Details {
		if d.Field == field {
			return
		}
	}
	t.Fatalf("error %v names %+v, want %s", err, e.Details, field)
}

// A new agent has its defaults: active, auto reasoning, top 5, 1024 reply tokens, memory on, a
// subdomain from its name; it needs a name and a model.
func TestCreate(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	b, err := s.Create(ctx, "p-1", "key-1", agents.Create{Name: "  Support Bot!  ", Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "Support Bot!" || b.Status != agents.StatusActive || b.ReasoningType != "auto" || b.Top != agents.DefaultTop ||
		b.MaxReplyTokens != "1024" || b.Memory != 1 || !strings.HasPrefix(b.Subdomain, "support-bot-") || len(b.ID) != 24 || b.UUID == "" {
		t.Fatalf("created %+v", b)
	}
	inactive, err := s.Create(ctx, "p-1", "key-1", agents.Create{Name: "Quiet", Model: "m", Status: flag(0)})
	if err != nil || inactive.Active() {
		t.Fatalf("created inactive %+v (%v)", inactive, err)
	}
	for _, tt := range []struct {
		name  string
		in    agents.Create
		field string
	}{
		{"NoName", agents.Create{Model: "m"}, "name"},
		{"NoModel", agents.Create{Name: "A"}, "model"},
		{"LongName", agents.Create{Name: strings.Repeat("n", agents.MaxNameLength+1), Model: "m"}, "name"},
		{"Status", agents.Create{Name: "A", Model: "m", Status: flag(2)}, "status"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Create(ctx, "p-1", "key-1", tt.in)
			wantInvalid(t, err, tt.field)
		})
	}
	if _, total, err := s.List(ctx, "p-1", pageOne); err != nil || total != 2 {
		t.Fatalf("%d agents stored (%v)", total, err)
	}
}

// An update changes what it names and nothing else, checking each field's bounds; the whole
// update is refused when one field is wrong.
func TestUpdate(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	b, err := s.Create(ctx, "p-1", "key-1", agents.Create{Name: "Bot", Model: "m", Instruction: "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Update(ctx, "p-1", b.UUID, "key-1", agents.Patch{Top: num(8), RatelimitMessage: ptr(" Slow down. ")})
	if err != nil || got.Top != 8 || got.RatelimitMessage != "Slow down." || got.Instruction != "Be brief." || got.Name != "Bot" {
		t.Fatalf("updated %+v (%v)", got, err)
	}
	for _, tt := range []struct {
		name  string
		patch agents.Patch
		field string
	}{
		{"Top", agents.Patch{Top: num(51)}, "top"},
		{"ReasoningType", agents.Patch{ReasoningType: ptr("psychic")}, "reasoning_type"},
		{"ReplyTokens", agents.Patch{MaxReplyTokens: num(0)}, "max_reply_tokens"},
		{"Avatar", agents.Patch{Avatar: ptr("javascript:alert(1)")}, "avatar"},
		{"Subdomain", agents.Patch{Subdomain: ptr("-bad-")}, "subdomain"},
		{"Domain", agents.Patch{Domain: ptr("https://help.example.com/")}, "domain"},
		{"Flag", agents.Patch{AutoApproveTools: flag(2)}, "auto_approve_tools"},
		{"EmptyName", agents.Patch{Name: ptr("  ")}, "name"},
		{"OneWrongOfTwo", agents.Patch{Instruction: ptr("Changed."), RatelimitSeconds: num(-1)}, "ratelimit_seconds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Update(ctx, "p-1", b.ID, "key-1", tt.patch)
			wantInvalid(t, err, tt.field)
		})
	}
	if after, err := s.Get(ctx, "p-1", b.ID); err != nil || after.Instruction != "Be brief." || after.Top != 8 {
		t.Fatalf("after the refused updates %+v (%v)", after, err)
	}
}

// An agent is found by its id or uuid in its own project only; Find finds it, and so its
// project, from the agent alone; a deleted agent is found by neither.
func TestFindAndDelete(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	b, err := s.Create(ctx, "p-1", "key-1", agents.Create{Name: "Bot", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{b.ID, b.UUID} {
		if got, err := s.Get(ctx, "p-1", id); err != nil || got.ID != b.ID {
			t.Fatalf("by %s: %+v (%v)", id, got, err)
		}
		if _, err := s.Get(ctx, "p-2", id); apperr.As(err).Kind != apperr.NotFound {
			t.Fatalf("from another project by %s: %v", id, err)
		}
		if found, err := s.Find(ctx, id); err != nil || found.ProjectID != "p-1" || found.ID != b.ID || found.Name != "Bot" {
			t.Fatalf("Find(%s) = %+v (%v)", id, found, err)
		}
	}
	if _, err := s.Update(ctx, "p-2", b.ID, "key-1", agents.Patch{Name: ptr("Taken")}); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("changed from another project: %v", err)
	}
	if err := s.Delete(ctx, "p-2", b.ID); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("deleted from another project: %v", err)
	}
	if _, err := s.Get(ctx, "p-1", ""); apperr.As(err).Kind != apperr.Invalid {
		t.Fatalf("no id: %v", err)
	}
	if err := s.Delete(ctx, "p-1", b.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "p-1", b.ID); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("a deleted agent: %v", err)
	}
	if _, err := s.Find(ctx, b.ID); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("a deleted agent found alone: %v", err)
	}
}

var pageOne = paging.Page{Page: 1, PerPage: 50}
