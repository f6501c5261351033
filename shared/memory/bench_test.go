package memory_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/memory/text"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// goSentences are the sentences of the Go distribution's documents: real prose to build
// benchmark chunks from.
func goSentences(tb testing.TB) []string {
	tb.Helper()
	var out []string
	end := regexp.MustCompile(`[.!?]\s+`)
	for _, name := range []string{"go_spec.html", "go_mem.html", "godebug.md"} {
		raw, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "doc", name))
		if err != nil {
			tb.Fatal(err)
		}
		doc, _, err := text.Extract(raw, "", nil)
		if err != nil {
			tb.Fatal(err)
		}
		for _, s := range end.Split(strings.Join(strings.Fields(doc.Text), " "), -1) {
			if len(strings.Fields(s)) >= 4 {
				out = append(out, s+".")
			}
		}
	}
	return out
}

// seed stores n chunks of about 250 words for one agent, in sources of perSource chunks, as
// the ingester leaves them.
func seed(b testing.TB, repo store.Sources, project, bot string, n, perSource int, sentences []string) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	for first := 0; first < n; first += perSource {
		id := bson.NewObjectID().Hex()
		src := sources.Source{ID: id, UUID: id, ProjectID: project, BotID: bot, Title: "s", Type: sources.TypeText,
			Status: sources.StatusProcessing, Pending: "g", Tags: []string{}, Links: []sources.Link{}}
		if err := repo.Insert(ctx, src, outbox.New(context.Background(), outbox.SourceCreated, project, bot, struct{}{})); err != nil {
			b.Fatal(err)
		}
		chunks := make([]memory.Chunk, min(perSource, n-first))
		for i := range chunks {
			var sb strings.Builder
			for words := 0; words < 250; {
				s := sentences[rng.IntN(len(sentences))]
				sb.WriteString(s + " ")
				words += len(strings.Fields(s))
			}
			chunks[i] = memory.Chunk{ID: memory.ChunkRef{SourceID: id, Gen: "g", Position: i}.ID(), ProjectID: project, BotID: bot, SourceID: id, Gen: "g", Position: i, Text: sb.String()}
		}
		if err := repo.PutChunks(ctx, id, "g", chunks); err != nil {
			b.Fatal(err)
		}
		src.Status, src.Gen, src.Chunks = sources.StatusSuccess, "g", len(chunks)
		if ok, err := repo.Complete(ctx, src, "g", outbox.New(context.Background(), outbox.SourceReady, project, bot, struct{}{})); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

// goQueries are questions about the Go documents the benchmarks and tests seed.
var goQueries = []string{"what happens when you send on a closed channel", "method sets of interface types",
	"goroutine creation happens before", "constant expressions untyped", "select statement default case",
	"how are struct tags compared", "GODEBUG settings for http2", "slice of an array capacity"}

// BenchmarkRetrieval is one agent's query over 1k, 10k and 100k chunks through the whole path:
// the live sources read from the store, the cached index segments searched, the winning chunks
// read back. Baseline: one point read of a chunk from the same store. p50/p99 are per query.
func BenchmarkRetrieval(b *testing.B) {
	sentences := goSentences(b)
	db := benchDB(b)
	repo := store.NewSources(db)
	ctx := context.Background()
	b.Run("Baseline/PointRead", func(b *testing.B) {
		if c, _ := db.Collection("sources").CountDocuments(ctx, bson.D{{Key: "bot_id", Value: "b-base"}}); c == 0 {
			seed(b, repo, "p-base", "b-base", 10, 1000, sentences)
		}
		coll := db.Collection("sources")
		var src struct {
			ID string `bson:"_id"`
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "bot_id", Value: "b-base"}}).Decode(&src); err != nil {
			b.Fatal(err)
		}
		id := src.ID
		latencies(b, func() {
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err(); err != nil {
				b.Fatal(err)
			}
		})
	})
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("chunks=%dk", n/1000), func(b *testing.B) {
			bot := fmt.Sprintf("bot-%d", n)
			if c, _ := db.Collection("chunks").CountDocuments(ctx, bson.D{{Key: "bot_id", Value: bot}}); c == 0 {
				seed(b, repo, "p", bot, n, 1000, sentences)
			}
			m := memory.New(store.NewMemory(db), nil, 1<<30, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if _, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: "warm"}); err != nil {
				b.Fatal(err)
			}
			i := 0
			latencies(b, func() {
				i++
				res, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: goQueries[i%len(goQueries)], Top: 5})
				if err != nil || len(res) == 0 {
					b.Fatal(len(res), err)
				}
			})
		})
	}
}

// BenchmarkRetrievalSources compares two agents holding the same 2000 chunks through the whole
// path: one in a single source, the other in 500 small sources of 4 chunks (a FAQ or a
// handful of short notes each). Their queries alternate, warm cache; p50/p99 are per query and
// the ratios are the 500-source agent's over the one-source agent's.
func BenchmarkRetrievalSources(b *testing.B) {
	const chunks, small = 2000, 500
	sentences := goSentences(b)
	db := benchDB(b)
	repo := store.NewSources(db)
	ctx := context.Background()
	m := memory.New(store.NewMemory(db), nil, 1<<30, slog.New(slog.NewTextHandler(io.Discard, nil)))
	bots := []string{"bot-sources-1", fmt.Sprintf("bot-sources-%d", small)}
	for i, bot := range bots {
		if c, _ := db.Collection("chunks").CountDocuments(ctx, bson.D{{Key: "bot_id", Value: bot}}); c == 0 {
			seed(b, repo, "p", bot, chunks, []int{chunks, chunks / small}[i], sentences)
		}
		if _, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: "warm"}); err != nil {
			b.Fatal(err)
		}
	}
	times := [2][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for j, bot := range bots {
			start := time.Now()
			res, err := m.Search(ctx, memory.Query{ProjectID: "p", BotID: bot, Text: goQueries[i%len(goQueries)], Top: 5})
			times[j] = append(times[j], time.Since(start))
			if err != nil || len(res) == 0 {
				b.Fatal(len(res), err)
			}
		}
	}
	b.StopTimer()
	var p50, p99 [2]float64
	for j := range times {
		slices.Sort(times[j])
		p50[j] = float64(times[j][len(times[j])/2].Microseconds()) / 1000
		p99[j] = float64(times[j][len(times[j])*99/100].Microseconds()) / 1000
	}
	b.ReportMetric(p50[0], "p50-ms-1")
	b.ReportMetric(p99[0], "p99-ms-1")
	b.ReportMetric(p50[1], fmt.Sprintf("p50-ms-%d", small))
	b.ReportMetric(p99[1], fmt.Sprintf("p99-ms-%d", small))
	b.ReportMetric(p50[1]/p50[0], "p50-ratio")
	b.ReportMetric(p99[1]/p99[0], "p99-ratio")
}

// benchStore is the database the retrieval benchmarks seed once per process: `go test -count`
// calls a benchmark function again for each count, and seeding 100k chunks takes minutes.
var benchStore struct {
	sync.Mutex
	db *mongo.Database
}

func benchDB(b testing.TB) *mongo.Database {
	b.Helper()
	benchStore.Lock()
	defer benchStore.Unlock()
	if benchStore.db == nil {
		db, err := store.Open(testenv.MongoURI(), testenv.NewName(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := testenv.Prepare(context.Background(), db); err != nil {
			b.Fatal(err)
		}
		benchStore.db = db
	}
	return benchStore.db
}

// latencies runs op b.N times and reports its p50 and p99 in milliseconds.
func latencies(b *testing.B, op func()) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		op()
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}
