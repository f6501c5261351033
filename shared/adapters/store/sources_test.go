package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
)

// newSource stores a processing text source of agent b with content as its source.
func newSource(t *testing.T, repo store.Sources, content string) sources.Source {
	t.Helper()
	ctx := context.Background()
	id := bson.NewObjectID().Hex()
	s := sources.Source{ID: id, UUID: id, ProjectID: "p", BotID: "b", Title: "t", Type: sources.TypeText, Source: content,
		Status: sources.StatusProcessing, Tags: []string{}, Links: []sources.Link{}, CreatedAt: time.Now().UTC()}
	if err := repo.Insert(ctx, s, outbox.New(ctx, outbox.SourceCreated, "p", "b", struct{}{})); err != nil {
		t.Fatal(err)
	}
	return s
}

// chunksOf are n chunks of generation gen of s, their texts prefixed with prefix.
func chunksOf(s sources.Source, gen, prefix string, n int) []memory.Chunk {
	out := make([]memory.Chunk, n)
	for i := range out {
		out[i] = memory.Chunk{ID: memory.ChunkRef{SourceID: s.ID, Gen: gen, Position: i}.ID(), ProjectID: s.ProjectID, BotID: s.BotID,
			SourceID: s.ID, Gen: gen, Position: i, Text: fmt.Sprintf("%s %d", prefix, i)}
	}
	return out
}

// storedTexts are the texts of the stored chunks of generation gen of s, in order.
func storedTexts(t *testing.T, db store.Memory, s sources.Source, gen string) []string {
	t.Helper()
	// A count well above what any attempt stores, so that documents an attempt left are read too.
	got, err := db.Generations(context.Background(), []memory.Live{{Ref: memory.Ref{SourceID: s.ID}, Gen: gen, Chunks: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range got[s.ID+"/"+gen] {
		if c.Position != len(texts) {
			t.Fatalf("chunk %d at position %d", len(texts), c.Position)
		}
		texts = append(texts, c.Text)
	}
	return texts
}

// A generation stored again (a retried ingestion) holds only the chunks of the last attempt,
// however many the earlier one stored, also when an earlier drop of it stopped half way.
func TestPutChunksReplacesAnEarlierAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo, mem := store.NewSources(db), store.NewMemory(db)
	s := newSource(t, repo, "text")
	if err := repo.PutChunks(ctx, s.ID, "g", chunksOf(s, "g", "first", 120)); err != nil {
		t.Fatal(err)
	}
	if got := storedTexts(t, mem, s, "g"); len(got) != 120 || got[119] != "first 119" {
		t.Fatalf("first attempt stored %d chunks", len(got))
	}
	if err := repo.PutChunks(ctx, s.ID, "g", chunksOf(s, "g", "second", 10)); err != nil {
		t.Fatal(err)
	}
	if got := storedTexts(t, mem, s, "g"); len(got) != 10 || got[0] != "second 0" || got[9] != "second 9" {
		t.Fatalf("second attempt: %q", got)
	}
	// A drop interrupted after removing all but the generation's first document.
	if err := repo.PutChunks(ctx, s.ID, "g", chunksOf(s, "g", "third", 120)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("chunks").DeleteMany(ctx, bson.D{{Key: "source_id", Value: s.ID}, {Key: "_id", Value: bson.D{{Key: "$ne", Value: s.ID + "-g-0"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := repo.PutChunks(ctx, s.ID, "g", chunksOf(s, "g", "fourth", 60)); err != nil {
		t.Fatal(err)
	}
	if got := storedTexts(t, mem, s, "g"); len(got) != 60 || got[0] != "fourth 0" || got[59] != "fourth 59" {
		t.Fatalf("after an interrupted drop: %d chunks", len(got))
	}
	if err := repo.DropGeneration(ctx, s.ID, "g"); err != nil {
		t.Fatal(err)
	}
	if got := storedTexts(t, mem, s, "g"); len(got) != 0 {
		t.Fatalf("dropped generation still has %d chunks", len(got))
	}
	if n, err := db.Collection("chunks").CountDocuments(ctx, bson.D{{Key: "source_id", Value: s.ID}}); err != nil || n != 0 {
		t.Fatalf("%d chunk documents left (%v)", n, err)
	}
}

// Load reads a live source by id whatever its project, and not a deleted one.
func TestLoadLeavesOutDeletedSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewSources(db)
	s := newSource(t, repo, "some text")
	got, err := repo.Load(ctx, s.ID)
	if err != nil || got.ID != s.ID || got.Source != "some text" {
		t.Fatalf("load: %+v, %v", got, err)
	}
	if err := repo.Delete(ctx, s, time.Now().UTC(), outbox.New(ctx, outbox.SourceDeleted, "p", "b", struct{}{})); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Load(ctx, s.ID); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("load of a deleted source: %v", err)
	}
	if _, err := repo.Load(ctx, "missing"); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("load of a missing source: %v", err)
	}
}

// ready completes generation gen of s as a ready source.
func ready(t *testing.T, repo store.Sources, s sources.Source, gen string) {
	t.Helper()
	ctx := context.Background()
	s, err := repo.Pend(ctx, s.ID, "", gen, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Status, s.Gen, s.Chunks = sources.StatusSuccess, gen, 1
	if ok, err := repo.Complete(ctx, s, gen, outbox.New(ctx, outbox.SourceReady, "p", "b", struct{}{})); err != nil || !ok {
		t.Fatal(ok, err)
	}
}

// listed are the ids of the sources retrieval lists for agent b.
func listed(t *testing.T, mem store.Memory) []string {
	t.Helper()
	live, _, err := mem.Live(context.Background(), "p", "b")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range live {
		ids = append(ids, l.Ref.SourceID)
	}
	return ids
}

// A ready source enters its agent's live list, the first one creating it, unless the list marks
// it removed for good (its deletion took it out before tombstoning it): a late ingestion does not
// bring it back.
func TestReadySourcesAreListedUnlessRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo, mem := store.NewSources(db), store.NewMemory(db)
	removed, first, second := newSource(t, repo, "a"), newSource(t, repo, "b"), newSource(t, repo, "c")
	if _, err := db.Collection("memory_live").InsertOne(ctx, bson.D{{Key: "_id", Value: "b"}, {Key: "project_id", Value: "p"},
		{Key: "entries", Value: bson.D{{Key: removed.ID, Value: bson.D{{Key: "removed", Value: true}}}}}}); err != nil {
		t.Fatal(err)
	}
	ready(t, repo, removed, "g")
	if got := listed(t, mem); len(got) != 0 {
		t.Fatalf("a removed source came back: %v", got)
	}
	if _, err := db.Collection("memory_live").DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	ready(t, repo, first, "g")
	ready(t, repo, second, "g")
	if got := listed(t, mem); len(got) != 2 || !slices.Contains(got, first.ID) || !slices.Contains(got, second.ID) {
		t.Fatalf("listed %v, want %s and %s", got, first.ID, second.ID)
	}
	// An entry is stored without its empty fields, and read with them.
	var raw bson.Raw
	if err := db.Collection("memory_live").FindOne(ctx, bson.D{{Key: "_id", Value: "b"}}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if keys := fieldsOf(t, raw.Lookup("entries", first.ID).Document()); !slices.Equal(keys, []string{"uuid", "title", "type", "gen", "chunks"}) {
		t.Fatalf("a text source listed as %v", keys)
	}
	list, _, err := mem.Live(ctx, "p", "b")
	if err != nil {
		t.Fatal(err)
	}
	if e := list[slices.IndexFunc(list, func(l memory.Listed) bool { return l.Ref.SourceID == first.ID })]; e.UUID != first.UUID ||
		e.Ref.Tags == nil || len(e.Ref.Tags) != 0 || e.Ref.URL != "" || e.ForgetAt != nil || e.Gen != "g" || e.Chunks != 1 || e.Ref.Title != first.Title {
		t.Fatalf("listed %+v of %+v", e, first)
	}
}

// textOf is the text stored apart of source id ("" when there is none).
func textOf(t *testing.T, db *mongo.Database, id string) string {
	t.Helper()
	var d struct {
		Text string `bson:"text"`
	}
	err := db.Collection("source_texts").FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatal(err)
	}
	return d.Text
}

// readsBack checks that every read of the repository returns want as the source of s.
func readsBack(t *testing.T, repo store.Sources, s sources.Source, want string) {
	t.Helper()
	ctx := context.Background()
	got, err := repo.Get(ctx, "p", "b", s.UUID)
	if err != nil || got.Source != want {
		t.Fatalf("get: %d bytes, want %d (%v)", len(got.Source), len(want), err)
	}
	if got, err = repo.Load(ctx, s.ID); err != nil || got.Source != want {
		t.Fatalf("load: %d bytes, want %d (%v)", len(got.Source), len(want), err)
	}
	list, _, err := repo.List(ctx, "p", "b", sources.ListFilter{}, paging.Page{Page: 1, PerPage: paging.MaxPerPage})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(l sources.Source) bool { return l.ID == s.ID })
	if i < 0 || list[i].Source != want {
		t.Fatalf("list: %d sources, %s in it at %d, want its %d bytes", len(list), s.ID, i, len(want))
	}
}

// A long text is kept out of its source's record, in a document of its own that every read puts
// back and the source's purge removes; a short one stays in the record.
func TestLongSourceTextsAreKeptApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewSources(db)
	long, other := strings.Repeat("The harbour opens at dawn. ", 1000), strings.Repeat("Ferries leave hourly. ", 1000)
	a, b, short := newSource(t, repo, long), newSource(t, repo, other), newSource(t, repo, "short")
	var record struct {
		Source string `bson:"source"`
	}
	if err := db.Collection("sources").FindOne(ctx, bson.D{{Key: "_id", Value: a.ID}}).Decode(&record); err != nil || record.Source != "" {
		t.Fatalf("the record holds %d bytes of source (%v)", len(record.Source), err)
	}
	if textOf(t, db, a.ID) != long || textOf(t, db, short.ID) != "" {
		t.Fatal("texts kept apart: the long one's missing or the short one's there")
	}
	readsBack(t, repo, a, long)
	readsBack(t, repo, b, other)
	readsBack(t, repo, short, "short")
	pended, err := repo.Pend(ctx, a.ID, "", "g", time.Now())
	if err != nil || pended.Source != long {
		t.Fatalf("pend: %d bytes (%v)", len(pended.Source), err)
	}
	if err := repo.Delete(ctx, a, time.Now().UTC(), outbox.New(ctx, outbox.SourceDeleted, "p", "b", struct{}{})); err != nil {
		t.Fatal(err)
	}
	if textOf(t, db, a.ID) != "" || textOf(t, db, b.ID) != other {
		t.Fatal("the deleted source's text is left, or the other's went")
	}
}

// Sources stored before texts were kept apart hold their text in the record: reads return it.
func TestInlineSourceTextsAreRead(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	repo := store.NewSources(db)
	id := bson.NewObjectID().Hex()
	s := sources.Source{ID: id, UUID: id, ProjectID: "p", BotID: "b", Title: "t", Type: sources.TypeText,
		Source: strings.Repeat("The harbour opens at dawn. ", 1000), Status: sources.StatusProcessing, CreatedAt: time.Now().UTC()}
	if _, err := db.Collection("sources").InsertOne(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	readsBack(t, repo, s, s.Source)
}
