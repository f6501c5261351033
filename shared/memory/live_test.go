package memory_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
)

// ingest makes generation gen of source s hold texts and the source ready, as the ingester does.
func ingest(t *testing.T, repo store.Sources, s sources.Source, gen string, texts ...string) sources.Source {
	t.Helper()
	ctx := context.Background()
	s, err := repo.Pend(ctx, s.ID, "", gen, time.Now())
	if err != nil || s.Pending != gen {
		t.Fatal(s.Pending, err)
	}
	chunks := make([]memory.Chunk, len(texts))
	for i, text := range texts {
		chunks[i] = memory.Chunk{ID: memory.ChunkRef{SourceID: s.ID, Gen: gen, Position: i}.ID(), ProjectID: s.ProjectID, BotID: s.BotID,
			SourceID: s.ID, Gen: gen, Position: i, Text: text}
	}
	if err := repo.PutChunks(ctx, s.ID, gen, chunks); err != nil {
		t.Fatal(err)
	}
	s.Status, s.Gen, s.Chunks = sources.StatusSuccess, gen, len(chunks)
	if ok, err := repo.Complete(ctx, s, gen, outbox.New(ctx, outbox.SourceReady, s.ProjectID, s.BotID, struct{}{})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	s.Pending = ""
	return s
}

// TestLiveListChangesAreSeenAtOnce checks that a query right after a source is re-ingested,
// edited, failed or deleted sees the change, although the agent's live list is cached.
func TestLiveListChangesAreSeenAtOnce(t *testing.T) {
	ctx := context.Background()
	db := benchDB(t)
	repo := store.NewSources(db)
	bot := "bot-" + bson.NewObjectID().Hex()
	var srcs []sources.Source
	for i, text := range []string{"albatross feathers", "bramble thickets", "cormorant dives"} {
		id := bson.NewObjectID().Hex()
		s := sources.Source{ID: id, UUID: id, ProjectID: "p", BotID: bot, Title: []string{"a", "b", "c"}[i], Type: sources.TypeText,
			Status: sources.StatusProcessing, Tags: []string{}, Links: []sources.Link{}}
		if err := repo.Insert(ctx, s, outbox.New(ctx, outbox.SourceCreated, "p", bot, struct{}{})); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, ingest(t, repo, s, "g1", text))
	}
	m := memory.New(store.NewMemory(db), nil, 1<<30, slog.New(slog.NewTextHandler(io.Discard, nil)))
	search := func(text string) []string {
		t.Helper()
		res, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res {
			out = append(out, p.Source.Title+":"+p.ChunkID)
		}
		return out
	}
	chunk := func(s sources.Source, gen string) string {
		return s.Title + ":" + memory.ChunkRef{SourceID: s.ID, Gen: gen, Position: 0}.ID()
	}
	expect := func(text string, want ...string) {
		t.Helper()
		if got := search(text); !slices.Equal(got, want) {
			t.Fatalf("%q found %v, want %v", text, got, want)
		}
	}
	expect("albatross", chunk(srcs[0], "g1"))
	expect("bramble", chunk(srcs[1], "g1"))
	expect("cormorant", chunk(srcs[2], "g1"))

	srcs[1].Title, srcs[1].Rev = "b2", srcs[1].Rev+1
	if err := repo.Update(ctx, srcs[1], outbox.New(ctx, outbox.SourceUpdated, "p", bot, struct{}{})); err != nil {
		t.Fatal(err)
	}
	expect("bramble", chunk(srcs[1], "g1"))

	srcs[0] = ingest(t, repo, srcs[0], "g2", "dunlin flocks")
	expect("albatross")
	expect("dunlin", chunk(srcs[0], "g2"))

	failed := srcs[1]
	failed.Status, failed.Pending = sources.StatusFailed, "g3"
	if _, err := repo.Pend(ctx, failed.ID, "", "g3", time.Now()); err != nil {
		t.Fatal(err)
	}
	if ok, err := repo.Complete(ctx, failed, "g3", outbox.New(ctx, outbox.SourceFailed, "p", bot, struct{}{})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	expect("bramble")

	// An ingestion that another superseded before it completed leaves the list as the source's
	// record has it: its generation listed for a moment, then the one before again.
	for _, p := range [][2]string{{"", "g4"}, {"g4", "g5"}} {
		if _, err := repo.Pend(ctx, srcs[0].ID, p[0], p[1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	chunks := []memory.Chunk{{ID: memory.ChunkRef{SourceID: srcs[0].ID, Gen: "g4"}.ID(), ProjectID: "p", BotID: bot, SourceID: srcs[0].ID,
		Gen: "g4", Text: "egret wades"}}
	if err := repo.PutChunks(ctx, srcs[0].ID, "g4", chunks); err != nil {
		t.Fatal(err)
	}
	superseded := srcs[0]
	superseded.Gen = "g4"
	if ok, err := repo.Complete(ctx, superseded, "g4", outbox.New(ctx, outbox.SourceReady, "p", bot, struct{}{})); err != nil || ok {
		t.Fatal(ok, err)
	}
	expect("egret")
	expect("dunlin", chunk(srcs[0], "g2"))

	if err := repo.Delete(ctx, srcs[2], time.Now(), outbox.New(ctx, outbox.SourceDeleted, "p", bot, struct{}{})); err != nil {
		t.Fatal(err)
	}
	expect("cormorant")
	expect("dunlin", chunk(srcs[0], "g2"))
}

// TestMergedSearchMatchesUnmerged checks that searching an agent's small sources merged into
// one segment (an unfiltered query) returns what searching them one by one does (a query
// filtered to all its sources): same passages, same order, same scores.
func TestMergedSearchMatchesUnmerged(t *testing.T) {
	ctx := context.Background()
	db := benchDB(t)
	repo := store.NewSources(db)
	bot := "bot-" + bson.NewObjectID().Hex()
	sentences := goSentences(t)
	seed(t, repo, "p", bot, 1000, 1000, sentences)
	seed(t, repo, "p", bot, 200, 5, sentences)
	listed, _, err := store.NewMemory(db).Live(ctx, "p", bot)
	if err != nil || len(listed) != 41 {
		t.Fatal(len(listed), err)
	}
	var all []string
	for _, l := range listed {
		all = append(all, l.Ref.SourceID)
	}
	m := memory.New(store.NewMemory(db), nil, 1<<30, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, text := range goQueries {
		merged, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: text, Top: memory.MaxTop})
		if err != nil {
			t.Fatal(err)
		}
		separate, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: text, Top: memory.MaxTop, Filter: memory.Filter{SourceIDs: all}})
		if err != nil {
			t.Fatal(err)
		}
		if len(merged) != memory.MaxTop || len(separate) != memory.MaxTop {
			t.Fatalf("%q: %d passages merged, %d separate", text, len(merged), len(separate))
		}
		for i := range merged {
			if merged[i].ChunkID != separate[i].ChunkID || math.Abs(merged[i].Score-separate[i].Score) > 1e-12 {
				t.Fatalf("%q passage %d: merged %s %v, separate %s %v", text, i, merged[i].ChunkID, merged[i].Score, separate[i].ChunkID, separate[i].Score)
			}
		}
	}
}
