package memory_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
)

// TestSearchCollapsesNearDuplicates checks that a page stored three times, twice as is and once
// with a few words changed, fills one place among the passages, and the next place goes to the
// next distinct passage.
func TestSearchCollapsesNearDuplicates(t *testing.T) {
	const (
		page = "To descale the kettle, fill it with equal parts of water and white vinegar, " +
			"bring it to the boil, leave it to stand for an hour, then rinse it twice with clean water."
		edited = "To descale the kettle, fill it with equal parts of water and white vinegar, " +
			"bring it to the boil, leave it to stand for an hour, then rinse it three times with clean water."
		other = "The kettle switches itself off when the water boils or when it is lifted from its base."
	)
	ctx := context.Background()
	db := benchDB(t)
	repo := store.NewSources(db)
	bot := "bot-" + bson.NewObjectID().Hex()
	for i, text := range []string{page, page, edited, other} {
		id := bson.NewObjectID().Hex()
		s := sources.Source{ID: id, UUID: id, ProjectID: "p", BotID: bot, Title: []string{"a", "b", "c", "d"}[i], Type: sources.TypeText,
			Status: sources.StatusProcessing, Tags: []string{}, Links: []sources.Link{}}
		if err := repo.Insert(ctx, s, outbox.New(ctx, outbox.SourceCreated, "p", bot, struct{}{})); err != nil {
			t.Fatal(err)
		}
		ingest(t, repo, s, "g1", text)
	}
	m := memory.New(store.NewMemory(db), nil, 1<<30, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, top := range []int{2, memory.DefaultTop} {
		res, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: "how do I descale the kettle with vinegar", Top: top})
		if err != nil {
			t.Fatal(err)
		}
		var texts, titles []string
		for _, p := range res {
			texts, titles = append(texts, p.Text), append(titles, p.Source.Title)
		}
		if len(texts) != 2 || !slices.Contains([]string{page, edited}, texts[0]) || texts[1] != other {
			t.Fatalf("top %d: passages %q (sources %v), want one copy of the page, then the other passage", top, texts, titles)
		}
	}
}
