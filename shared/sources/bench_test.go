package sources_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/devenv/eventstest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/memory/text"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tasks"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// queue drops tasks: the benchmark calls the ingester itself.
type queue struct{}

func (queue) Enqueue(context.Context, tasks.Task) error { return nil }
func (queue) Forget(context.Context, tasks.Task) error  { return nil }

// BenchmarkIngest turns text into searchable chunks: a text source of the Go specification's
// text (about 200 KB) is created, chunked, counted and stored. Baseline: chunking the same text
// with text.Split alone. SetBytes makes `go test` report MB/s; Ingest also reports MB per CPU
// second (cpuTime).
func BenchmarkIngest(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "doc", "go_spec.html"))
	if err != nil {
		b.Fatal(err)
	}
	page, _, err := text.Extract(raw, "text/html", nil)
	if err != nil {
		b.Fatal(err)
	}
	content := page.Text
	b.Run("Baseline/Split", func(b *testing.B) {
		b.SetBytes(int64(len(content)))
		for range b.N {
			text.Split(content, text.ChunkOptions{})
		}
	})
	b.Run("Ingest", func(b *testing.B) {
		ctx := context.Background()
		svc, ing, _ := newIngestion(b)
		b.SetBytes(int64(len(content)))
		b.ResetTimer()
		start := cpuTime()
		defer func() {
			b.ReportMetric(float64(len(content))*float64(b.N)/(cpuTime()-start).Seconds()/1e6, "MB/cpu-s")
		}()
		for i := range b.N {
			src, err := svc.Create(ctx, "p", "b", "test", sources.Input{Title: new("spec"), Type: new("text"), Source: new(strings.Repeat(" ", i%2) + content)})
			if err != nil {
				b.Fatal(err)
			}
			if err := ing.Ingest(ctx, tasks.SourceIngestPayload{SourceID: src.ID, Gen: src.Pending}, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cpuTime returns the CPU time the process (ingestion, the embedded store and NATS, the garbage
// collector) has used: on a machine shared with other work, bytes per CPU second is ingestion's
// throughput per core, which the time between start and end is not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newIngestion returns the source service, the ingester and the repository of a fresh store.
func newIngestion(tb testing.TB) (*sources.Service, *sources.Ingester, store.Sources) {
	return newIngestionIn(tb, testenv.Mongo(tb))
}

// newIngestionIn returns the source service, the ingester and the repository of db.
func newIngestionIn(tb testing.TB, db *mongo.Database) (*sources.Service, *sources.Ingester, store.Sources) {
	pub, _ := eventstest.Stream(tb)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	repo := store.NewSources(db)
	ev := outbox.NewDispatcher(pub, store.NewOutbox(db), log, func(string) {})
	svc := sources.NewService(repo, ev, queue{}, 1<<20, log)
	ing := sources.NewIngester(repo, ev, safehttp.New(safehttp.Options{}), nil, 1, log, func(string, int) {})
	return svc, ing, repo
}
