package sources_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory/text"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tasks"
)

// A text source's record keeps its text once: users read it back as the source and, once
// ingested, as the content (clipped as any content), while the stored record holds no content.
func TestTextSourceContentIsItsSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, ing, repo := newIngestion(t)
	long := strings.Repeat("The harbour opens at dawn. ", sources.MaxContentBytes/20)
	for _, body := range []string{"Ferries leave every hour from the north pier.", long} {
		created, err := svc.Create(ctx, "p", "b", "test", sources.Input{Title: new("t"), Type: new("text"), Source: new(body)})
		if err != nil {
			t.Fatal(err)
		}
		if created.Content != "" {
			t.Fatalf("content before ingestion: %q", created.Content[:min(len(created.Content), 40)])
		}
		stored, err := repo.Load(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := ing.Ingest(ctx, tasks.SourceIngestPayload{SourceID: created.ID, Gen: stored.Pending}, true); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Get(ctx, "p", "b", created.UUID)
		if err != nil {
			t.Fatal(err)
		}
		want := body[:min(len(body), sources.MaxContentBytes)]
		if got.Status != sources.StatusSuccess || got.Source != body || got.Content != want || got.Tokens != text.Tokens(body) {
			t.Fatalf("read back: status %s, source %d bytes, content %d bytes (want %d), tokens %d", got.Status, len(got.Source), len(got.Content), len(want), got.Tokens)
		}
		list, _, err := svc.List(ctx, "p", "b", sources.ListFilter{}, paging.Page{Page: 1, PerPage: paging.MaxPerPage})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.ID == created.ID && s.Content != want {
				t.Fatalf("listed content %d bytes, want %d", len(s.Content), len(want))
			}
		}
		if stored, err = repo.Load(ctx, created.ID); err != nil || stored.Content != "" || stored.Source != body {
			t.Fatalf("stored content %d bytes, source %d bytes (%v)", len(stored.Content), len(stored.Source), err)
		}
	}
}

// A source stored before long texts were kept apart, its text in its record, is ingested and
// read back as before.
func TestInlineSourceIsIngested(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	svc, ing, _ := newIngestionIn(t, db)
	body := strings.Repeat("The harbour opens at dawn. ", 1000)
	now := time.Now().UTC()
	id := ids.ObjectID()
	if _, err := db.Collection("sources").InsertOne(ctx, sources.Source{ID: id, UUID: ids.New(), ProjectID: "p", BotID: "b", Title: "t",
		Type: sources.TypeText, Source: body, Status: sources.StatusProcessing, ForgetAfter: "never", SyncFrequency: sources.SyncNever,
		CreatedAt: now, UpdatedAt: now, Pending: "g", PendingSince: &now}); err != nil {
		t.Fatal(err)
	}
	if err := ing.Ingest(ctx, tasks.SourceIngestPayload{SourceID: id, Gen: "g"}, true); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Get(ctx, "p", "b", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != sources.StatusSuccess || got.Source != body || got.Content != body || got.Tokens != text.Tokens(body) {
		t.Fatalf("read back: status %s %q, source %d bytes, content %d bytes, tokens %d", got.Status, got.FailureReason, len(got.Source), len(got.Content), got.Tokens)
	}
}
