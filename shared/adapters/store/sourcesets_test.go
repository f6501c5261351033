package store_test

import (
	"context"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory"
)

// randomIDs are n distinct source ids (24 hex digits) in no order, the same for the same seed.
func randomIDs(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 0))
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b [12]byte
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		if id := hex.EncodeToString(b[:]); !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// putSet stores the set of ids of agent bot and returns its digest.
func putSet(t *testing.T, mem store.Memory, bot string, ids []string) string {
	t.Helper()
	sorted := slices.Sorted(slices.Values(ids))
	digest := memory.SetDigest(sorted)
	if err := mem.PutSourceSet(context.Background(), "p", bot, digest, sorted); err != nil {
		t.Fatal(err)
	}
	return digest
}

// setPages are the stored pages of agent bot's sets.
func setPages(t *testing.T, db *mongo.Database, bot string) []bson.M {
	t.Helper()
	cur, err := db.Collection("source_set_pages").Find(context.Background(), bson.D{{Key: "bot_id", Value: bot}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A set reads back exactly as it was stored, whatever its size: empty, one id, a page's worth
// (kept in the set's document), one more, and thousands (in pages of their own, with the agent's
// project and id); storing it again changes nothing. A set stored before pages (its ids in its
// document) reads back too.
func TestSourceSetsReadBackExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	mem := store.NewMemory(db)
	for _, tt := range []struct {
		name  string
		n     int
		paged bool
	}{{"Empty", 0, false}, {"One", 1, false}, {"Page", 128, false}, {"Pages", 129, true}, {"Thousands", 5000, true}} {
		t.Run(tt.name, func(t *testing.T) {
			bot := "b" + tt.name
			want := slices.Sorted(slices.Values(randomIDs(uint64(tt.n), tt.n)))
			digest := putSet(t, mem, bot, want)
			putSet(t, mem, bot, want)
			got, err := mem.SourceSet(ctx, bot, digest)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("read back %d ids (%v), want %d", len(got), err, len(want))
			}
			pages := setPages(t, db, bot)
			if (len(pages) > 0) != tt.paged {
				t.Fatalf("%d ids stored in %d pages", tt.n, len(pages))
			}
			for _, p := range pages {
				if p["project_id"] != "p" || p["bot_id"] != bot {
					t.Fatalf("page %v of project %v, agent %v", p["_id"], p["project_id"], p["bot_id"])
				}
			}
		})
	}
	legacy := []string{"a1", "b2", "c3"}
	digest := memory.SetDigest(legacy)
	if _, err := db.Collection("source_sets").InsertOne(ctx, bson.D{{Key: "_id", Value: "old/" + digest}, {Key: "project_id", Value: "p"},
		{Key: "bot_id", Value: "old"}, {Key: "ids", Value: legacy}}); err != nil {
		t.Fatal(err)
	}
	if got, err := mem.SourceSet(ctx, "old", digest); err != nil || !slices.Equal(got, legacy) {
		t.Fatalf("legacy set: %v (%v)", got, err)
	}
	if _, err := mem.SourceSet(ctx, "old", memory.SetDigest([]string{"a1"})); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("a set never stored: %v, want not found", err)
	}
}

// Consecutive sets share their storage: an agent whose set grows one source at a time to n
// (each added where its id sorts, some removed on the way) stores a few pages a set, not the
// whole set again: the ids and digests of every page and set document together stay within a
// small multiple of n·log2(n), where a document of each set's ids would hold n²/2 of them.
func TestSourceSetsShareTheirPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	mem := store.NewMemory(db)
	const n = 2000
	r := rand.New(rand.NewPCG(1, 2))
	var set []string
	digests := map[string][]string{} // of every 100th set, read back at the end
	for i, id := range randomIDs(7, n) {
		set = append(set, id)
		if i%10 == 9 {
			i := r.IntN(len(set))
			set = slices.Delete(set, i, i+1)
		}
		digest := putSet(t, mem, "b", set)
		if i%100 == 99 {
			digests[digest] = slices.Sorted(slices.Values(set))
		}
	}
	entries := 0
	for _, p := range setPages(t, db, "b") {
		entries += len(p["entries"].(bson.A))
	}
	cur, err := db.Collection("source_sets").Find(ctx, bson.D{{Key: "bot_id", Value: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if ids, ok := d["ids"].(bson.A); ok {
			entries += len(ids)
		}
	}
	if bound := 16 * n * int(math.Log2(n)); entries > bound {
		t.Fatalf("%d sets stored in %d entries, want at most %d", n, entries, bound)
	}
	t.Logf("%d sets of up to %d ids stored in %d entries", n, len(set), entries)
	for digest, want := range digests {
		if got, err := mem.SourceSet(ctx, "b", digest); err != nil || !slices.Equal(got, want) {
			t.Fatalf("set %s: %d ids (%v), want %d", digest, len(got), err, len(want))
		}
	}
}

// A set whose pages are not as they were stored (one missing, one altered, its document's root
// level wrong) or whose ids are not those of its digest is an error, never another set.
func TestSourceSetsAlteredAreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	mem := store.NewMemory(db)
	pages, sets := db.Collection("source_set_pages"), db.Collection("source_sets")
	for _, tt := range []struct {
		name  string
		n     int
		alter func(t *testing.T, bot, digest string) error
	}{
		{"PageMissing", 5000, func(t *testing.T, bot, _ string) error {
			_, err := pages.DeleteOne(ctx, bson.D{{Key: "_id", Value: setPages(t, db, bot)[3]["_id"]}})
			return err
		}},
		{"LeafAltered", 5000, func(t *testing.T, bot, _ string) error {
			for _, p := range setPages(t, db, bot) {
				if p["level"] == int32(0) {
					_, err := pages.UpdateOne(ctx, bson.D{{Key: "_id", Value: p["_id"]}}, bson.D{{Key: "$set", Value: bson.D{{Key: "entries.0", Value: "ffffffffffffffffffffffff"}}}})
					return err
				}
			}
			t.Fatal("no leaf page")
			return nil
		}},
		{"LevelAltered", 5000, func(_ *testing.T, bot, digest string) error {
			_, err := sets.UpdateOne(ctx, bson.D{{Key: "_id", Value: bot + "/" + digest}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "level", Value: -1}}}})
			return err
		}},
		{"IDsAltered", 10, func(_ *testing.T, bot, digest string) error {
			_, err := sets.UpdateOne(ctx, bson.D{{Key: "_id", Value: bot + "/" + digest}}, bson.D{{Key: "$pop", Value: bson.D{{Key: "ids", Value: 1}}}})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bot := "b" + tt.name
			digest := putSet(t, mem, bot, randomIDs(3, tt.n))
			if _, err := mem.SourceSet(ctx, bot, digest); err != nil {
				t.Fatal(err)
			}
			if err := tt.alter(t, bot, digest); err != nil {
				t.Fatal(err)
			}
			if got, err := mem.SourceSet(ctx, bot, digest); err == nil || apperr.As(err).Kind != apperr.Internal {
				t.Fatalf("altered set: %d ids (%v), want an internal error", len(got), err)
			}
		})
	}
}

// Sets stored at once by several writers (processes: none knows what the others stored), sharing
// pages, are all stored whole.
func TestSourceSetsStoredConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	ids := randomIDs(5, 3000)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	digests := make([]string, 8)
	for w := range 8 {
		set := slices.Sorted(slices.Values(ids[:len(ids)-w%2]))
		digests[w] = memory.SetDigest(set)
		wg.Go(func() { errs[w] = store.NewMemory(db).PutSourceSet(ctx, "p", "b", digests[w], set) })
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
		if got, err := store.NewMemory(db).SourceSet(ctx, "b", digests[w]); err != nil || len(got) != len(ids)-w%2 {
			t.Fatalf("writer %d's set: %d ids (%v)", w, len(got), err)
		}
	}
}
