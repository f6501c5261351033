package cache_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/cache"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
)

// A process whose agents' memory is cached searches without a store command, an agent without
// sources included, and sees a source that another process made ready, and then deleted, as
// soon as that process's notice reaches it: the TTL (an hour) cannot explain it.
func TestLiveListChangesSeenEverywhere(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	ctx := context.Background()
	repo := store.NewSources(db).OnLiveChange(process(t).LiveChanged)
	other := memory.New(cache.MemoryVersions(store.NewMemory(db), process(t), 100, time.Hour), nil, 1<<30,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	bot := "bot-" + bson.NewObjectID().Hex()
	found := func(ctx context.Context) ([]string, error) {
		res, err := other.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: "albatross"})
		var titles []string
		for _, p := range res {
			titles = append(titles, p.Source.Title)
		}
		return titles, err
	}
	searchable := func() bool {
		got, err := found(ctx)
		return err == nil && len(got) == 1 && got[0] == "birds"
	}
	cachedSearch := func(want int) {
		t.Helper()
		if n := commands(t, func(ctx context.Context) error {
			got, err := found(ctx)
			if err == nil && len(got) != want {
				t.Errorf("found %v, want %d passages", got, want)
			}
			return err
		}); n != 0 {
			t.Fatalf("a search of an agent whose memory is cached made %d store commands", n)
		}
	}
	if got, err := found(ctx); err != nil || len(got) != 0 {
		t.Fatalf("an agent without sources: %v %v", got, err)
	}
	cachedSearch(0)

	id := bson.NewObjectID().Hex()
	s := sources.Source{ID: id, UUID: id, ProjectID: "p", BotID: bot, Title: "birds", Type: sources.TypeText,
		Status: sources.StatusProcessing, Tags: []string{}, Links: []sources.Link{}}
	if err := repo.Insert(ctx, s, outbox.New(ctx, outbox.SourceCreated, "p", bot, struct{}{})); err != nil {
		t.Fatal(err)
	}
	s, err := repo.Pend(ctx, id, "", "g1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	chunk := memory.Chunk{ID: memory.ChunkRef{SourceID: id, Gen: "g1"}.ID(), ProjectID: "p", BotID: bot, SourceID: id, Gen: "g1",
		Text: "the albatross glides for hours"}
	if err := repo.PutChunks(ctx, id, "g1", []memory.Chunk{chunk}); err != nil {
		t.Fatal(err)
	}
	s.Status, s.Gen, s.Chunks = sources.StatusSuccess, "g1", 1
	if ok, err := repo.Complete(ctx, s, "g1", outbox.New(ctx, outbox.SourceReady, "p", bot, struct{}{})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	within(t, 5*time.Second, "the other process searches the source made ready", searchable)
	cachedSearch(1)

	if err := repo.Delete(ctx, s, time.Now(), outbox.New(ctx, outbox.SourceDeleted, "p", bot, struct{}{})); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, "the other process no longer finds the deleted source", func() bool {
		got, err := found(ctx)
		return err == nil && len(got) == 0
	})
}
