package memory_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/memory"
)

// BenchmarkSetsGrowing stores the sets of an agent whose sources are created one at a time, up
// to n (PutSet, as each source's creation does), and reports the time of a set's write, the time
// of the last set's read by a process that has not cached it, what the store holds of them all
// (documents, ids and page digests, bytes) and what a document of each set's ids (the layout
// before pages) would hold.
func BenchmarkSetsGrowing(b *testing.B) {
	ctx := context.Background()
	db := testenv.Mongo(b)
	for _, n := range []int{2_000, 10_000} {
		b.Run(fmt.Sprintf("sources=%d", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				bot := fmt.Sprintf("b%d-%d", n, i)
				m := memory.New(store.NewMemory(db), nil, 64<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
				var ids []string
				var last *memory.Set
				var oneDoc int64
				start := time.Now()
				for range n {
					ids = append(ids, bson.NewObjectID().Hex())
					s, err := m.PutSet(ctx, "p", bot, ids)
					if err != nil {
						b.Fatal(err)
					}
					last = s
					b.StopTimer()
					raw, err := bson.Marshal(bson.D{{Key: "_id", Value: bot + "/" + s.Digest}, {Key: "project_id", Value: "p"},
						{Key: "bot_id", Value: bot}, {Key: "ids", Value: s.IDs()}})
					if err != nil {
						b.Fatal(err)
					}
					oneDoc += int64(len(raw))
					b.StartTimer()
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(n)/1000, "ms/set")
				b.StopTimer()
				start = time.Now()
				read, err := memory.New(store.NewMemory(db), nil, 64<<20, slog.New(slog.NewTextHandler(io.Discard, nil))).Set(ctx, bot, last.SetRef)
				if err != nil || read.Digest != last.Digest {
					b.Fatal(err)
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms-read")
				setDocs, setEntries, setBytes := storedOf(b, db.Collection("source_sets"), bot, "ids")
				pageDocs, pageEntries, pageBytes := storedOf(b, db.Collection("source_set_pages"), bot, "entries")
				b.ReportMetric(float64(setDocs+pageDocs), "docs")
				b.ReportMetric(float64(pageDocs), "page-docs")
				b.ReportMetric(float64(setEntries+pageEntries), "entries")
				b.ReportMetric(float64(setBytes+pageBytes)/1e6, "MB")
				b.ReportMetric(float64(n)*float64(n+1)/2, "entries-one-doc")
				b.ReportMetric(float64(oneDoc)/1e6, "MB-one-doc")
				b.StartTimer()
			}
		})
	}
}

// storedOf counts the documents of agent bot in coll, the entries of their field (an array) and
// their bytes.
func storedOf(b *testing.B, coll *mongo.Collection, bot, field string) (docs, entries, bytes int64) {
	b.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, bson.D{{Key: "bot_id", Value: bot}})
	if err != nil {
		b.Fatal(err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		docs++
		bytes += int64(len(cur.Current))
		if a, ok := cur.Current.Lookup(field).ArrayOK(); ok {
			vals, err := a.Values()
			if err != nil {
				b.Fatal(err)
			}
			entries += int64(len(vals))
		}
	}
	if err := cur.Err(); err != nil {
		b.Fatal(err)
	}
	return docs, entries, bytes
}
