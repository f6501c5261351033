package api_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tasks"
)

// planner is the scheduler's source planning on the test's queue, built by the composition root
// as a scheduler process is.
func (b *bundle) planner(t *testing.T, stuckAfter time.Duration) *sources.Planner {
	t.Helper()
	cfg := b.app.Cfg
	cfg.Role, cfg.SourceStuckAfter = "scheduler", stuckAfter
	a := app.New(cfg, b.log, b.app.Conns)
	t.Cleanup(a.Close)
	d, err := a.Scheduler()
	if err != nil {
		t.Fatal(err)
	}
	return d.Sources
}

// plan runs the planner as the scheduler would at now, and waits for the queue to drain.
func (b *bundle) plan(t *testing.T, p *sources.Planner, now time.Time) {
	t.Helper()
	if err := p.Plan(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	b.drain(t)
}

// drain waits until the test's queue has no pending, active or retrying task.
func (b *bundle) drain(t *testing.T) {
	t.Helper()
	ins := asynq.NewInspector(redisOpt(t))
	defer ins.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, err := ins.GetQueueInfo(b.queue)
		if err != nil && !strings.Contains(err.Error(), "not found") {
			t.Fatal(err)
		}
		if q == nil || q.Pending+q.Active+q.Retry+q.Scheduled == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue not drained: %+v", q)
		}
		waitABit()
	}
}

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, v.(string))
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func TestSourceForgetAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ing := b.startWorker(t, workerOptions{})
	a := b.sources(t)
	kept := a.ingest(t, map[string]any{"title": "kept", "type": "text", "source": "Lighthouses guide ships along the rocky coast at night."})
	gone := a.ingest(t, map[string]any{"title": "gone", "type": "text", "forget_after": "1 day", "source": "Lighthouses were once lit with whale oil lamps."})
	created := parseTime(t, gone["created_at"])
	if at := parseTime(t, gone["forget_after_at"]); !at.Equal(created.AddDate(0, 0, 1)) {
		t.Fatalf("forget_after_at %v for created %v", at, created)
	}
	if hits := a.search(t, "lighthouses", nil); len(hits) != 2 {
		t.Fatalf("before expiry %v", hits)
	}

	later := created.Add(25 * time.Hour)
	b.memory.SetClock(func() time.Time { return later })
	if hits := a.search(t, "lighthouses", nil); len(hits) != 1 || sourceOf(hits[0])["title"] != "kept" {
		t.Fatalf("an expired source must vanish from retrieval at once: %v", hits)
	}

	ing.SetClock(func() time.Time { return later })
	b.plan(t, b.planner(t, time.Hour), later)
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/source/read?" + a.query("&source_id="+gone["id"].(string)), Key: b.key})
	expect(t, res, http.StatusNotFound, "source_not_found")
	if n, _ := b.db.Collection("chunks").CountDocuments(t.Context(), map[string]any{"source_id": gone["id"]}); n != 0 {
		t.Fatalf("the sweep left %d chunks", n)
	}
	if n, _ := b.db.Collection("chunks").CountDocuments(t.Context(), map[string]any{"source_id": kept["id"]}); n == 0 {
		t.Fatal("the sweep removed a live source's chunks")
	}
	evs := streamEvents(t, "", b.project.ID, 6)
	if got := eventTypes(evs)[len(evs)-1]; got != "source.expired" {
		t.Fatalf("last event %s (%v)", got, eventTypes(evs))
	}
}

func TestSourceScheduledSync(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ing := b.startWorker(t, workerOptions{})
	a := b.sources(t)
	s := newSite(t)
	s.set("/news", `<html><head><title>News</title></head><body><p>The spring catalogue features copper kettles.</p></body></html>`)
	src := a.ingest(t, map[string]any{"title": "News", "type": "url", "source": s.URL + "/news", "sync_frequency": "weekly"})
	synced := parseTime(t, src["synced_at"])
	p := b.planner(t, time.Hour)
	read := func() map[string]any { return b.waitSource(t, a.botID, src["id"].(string)) }

	// Not due yet: nothing happens.
	b.plan(t, p, synced.Add(6*24*time.Hour))
	if got := parseTime(t, read()["synced_at"]); !got.Equal(synced) {
		t.Fatalf("synced early at %v", got)
	}

	// Due, unchanged: two schedulers plan the same tick; one sync only moves synced_at.
	week := synced.Add(8 * 24 * time.Hour)
	ing.SetClock(func() time.Time { return week })
	if err := p.Plan(context.Background(), week); err != nil {
		t.Fatal(err)
	}
	b.plan(t, b.planner(t, time.Hour), week)
	if got := parseTime(t, read()["synced_at"]); !got.Equal(week) {
		t.Fatalf("synced_at %v, want %v", got, week)
	}

	// Changed, after a long downtime: the missed weeks run once and the new text replaces the old.
	s.set("/news", `<html><head><title>News</title></head><body><p>The autumn catalogue features porcelain mugs.</p></body></html>`)
	month := week.Add(40 * 24 * time.Hour)
	ing.SetClock(func() time.Time { return month })
	b.plan(t, p, month)
	b.plan(t, p, month.Add(time.Minute))
	got := read()
	if !parseTime(t, got["synced_at"]).Equal(month) || !strings.Contains(got["content"].(string), "porcelain") {
		t.Fatalf("after the change %v", got)
	}
	if hits := a.search(t, "copper kettles", nil); len(hits) != 0 {
		t.Fatalf("old content still retrieved: %v", hits)
	}
	if hits := a.search(t, "porcelain mugs", nil); len(hits) != 1 {
		t.Fatalf("new content not retrieved: %v", hits)
	}
	evs := streamEvents(t, "", b.project.ID, 5)
	synced2 := 0
	for _, ev := range evs {
		if ev.Type == "source.synced" {
			synced2++
		}
	}
	if synced2 != 2 {
		t.Fatalf("%d source.synced events, want 2 (one per due sync): %v", synced2, eventTypes(evs))
	}
}

// A new source whose ingestion the API could not queue (Redis was down; here the queue loses
// the task) is queued by the first plan a minute later, and ingested.
func TestUnqueuedSourceIsQueuedByThePlan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.sources(t)
	src := a.create(t, map[string]any{"title": "t", "type": "text", "source": "Coopers bend oak staves into barrels."})
	ins := asynq.NewInspector(redisOpt(t))
	defer ins.Close()
	if n, err := ins.DeleteAllPendingTasks(b.queue); err != nil || n != 1 {
		t.Fatalf("deleted %d tasks: %v", n, err)
	}
	p := b.planner(t, 15*time.Minute)
	ingestions := func(now time.Time) int {
		t.Helper()
		if err := p.Plan(context.Background(), now); err != nil {
			t.Fatal(err)
		}
		pending, err := ins.ListPendingTasks(b.queue)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, task := range pending {
			if task.Type == tasks.TypeSourceIngest {
				n++
			}
		}
		return n
	}
	if n := ingestions(time.Now().Add(30 * time.Second)); n != 0 {
		t.Fatalf("%d ingestions queued before a minute", n)
	}
	if n := ingestions(time.Now().Add(time.Minute + time.Second)); n != 1 {
		t.Fatalf("%d ingestions queued after a minute, want 1", n)
	}
	b.startWorker(t, workerOptions{})
	if got := b.waitSource(t, a.botID, src["id"].(string)); got["status"] != "success" {
		t.Fatalf("after the plan %v", got)
	}
}

// A source whose task is stuck (here archived: its id stays taken, so queueing it again does
// nothing) gets a new generation after AGENTPLANE_SOURCE_STUCK_AFTER, and is ingested.
func TestStuckSourceIsReconciled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.sources(t)
	src := a.create(t, map[string]any{"title": "t", "type": "text", "source": "Glassblowers shape molten sand into bottles."})
	ins := asynq.NewInspector(redisOpt(t))
	defer ins.Close()
	if n, err := ins.ArchiveAllPendingTasks(b.queue); err != nil || n != 1 {
		t.Fatalf("archived %d tasks: %v", n, err)
	}
	b.startWorker(t, workerOptions{})
	p := b.planner(t, 15*time.Minute)
	b.plan(t, p, time.Now().Add(2*time.Minute))
	b.drain(t)
	if got := b.waitSourceNoWait(t, a.botID, src["id"].(string)); got["status"] != "processing" {
		t.Fatalf("reconciled too early: %v", got)
	}
	b.plan(t, p, time.Now().Add(16*time.Minute))
	if got := b.waitSource(t, a.botID, src["id"].(string)); got["status"] != "success" {
		t.Fatalf("after reconciling %v", got)
	}
}

// The sweep of sources stuck in processing leaves alone a source whose task is still under way
// (queued here; retrying in the field): a second generation would run beside the first.
func TestStuckSweepLeavesALiveTaskAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.sources(t)
	src := a.create(t, map[string]any{"title": "t", "type": "text", "source": "Lighthouse keepers trim the wicks at dusk."})
	ins := asynqInspector(t)
	p := b.planner(t, 15*time.Minute)
	if err := p.Plan(context.Background(), time.Now().Add(16*time.Minute)); err != nil {
		t.Fatal(err)
	}
	queued, err := ins.ListPendingTasks(b.queue)
	if err != nil {
		t.Fatal(err)
	}
	var ingests []string
	for _, task := range queued {
		if task.Type == tasks.TypeSourceIngest {
			ingests = append(ingests, task.ID)
		}
	}
	if len(ingests) != 1 {
		t.Fatalf("after the sweep the ingestions %v are queued, want the source's first alone", ingests)
	}
	b.startWorker(t, workerOptions{})
	if got := b.waitSource(t, a.botID, src["id"].(string)); got["status"] != "success" {
		t.Fatalf("source %v", got)
	}
}

// waitSourceNoWait reads the source once.
func (b *bundle) waitSourceNoWait(t *testing.T, botID, sourceID string) map[string]any {
	t.Helper()
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Key: b.key,
		Path: "/v1/bot/source/read?project_id=" + b.project.ID + "&bot_id=" + botID + "&source_id=" + sourceID})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["source"].(map[string]any)
}

// A reader never sees a source with none of its chunks, or with its old and new chunks at once,
// while it is re-indexed.
func TestResyncIsAtomicForReaders(t *testing.T) {
	t.Parallel()
	b := setup(t, withRateLimit(0))
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	s := newSite(t)
	page := func(word string) string {
		return `<html><body><p>Harbour pilots board arriving vessels. Version ` + word + `.</p></body></html>`
	}
	s.set("/pilots", page("one"))
	src := a.ingest(t, map[string]any{"title": "Pilots", "type": "url", "source": s.URL + "/pilots"})
	// The source enters the live list just after the write that made it ready.
	for deadline := time.Now().Add(5 * time.Second); len(a.search(t, "harbour pilots", nil)) != 1; waitABit() {
		if time.Now().After(deadline) {
			t.Fatal("the ready source is never found")
		}
	}

	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		queries atomic.Int64
	)
	// The reader reports with t.Error (FailNow must not be called from its goroutine), and is
	// stopped and waited for however the test ends.
	stopReader := func() {
		stop.Store(true)
		wg.Wait()
	}
	defer stopReader()
	wg.Go(func() {
		for !stop.Load() {
			hits, err := a.trySearch("harbour pilots", nil)
			if err != nil {
				t.Errorf("a reader's search failed mid re-index: %v", err)
				return
			}
			if len(hits) != 1 {
				t.Errorf("a reader saw %d passages mid re-index", len(hits))
				return
			}
			queries.Add(1)
		}
	})
	for i, word := range []string{"two", "three", "four"} {
		s.set("/pilots", page(word))
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/source/sync", Key: b.key, Body: a.body(map[string]any{"source_id": src["id"]})})
		expect(t, res, http.StatusOK, "")
		b.drain(t)
		if got := b.waitSourceNoWait(t, a.botID, src["id"].(string)); !strings.Contains(got["content"].(string), word) {
			t.Fatalf("sync %d: %v", i, got)
		}
	}
	stopReader()
	if queries.Load() == 0 {
		t.Fatal("no query ran during the re-index")
	}
}

// embeddingServer is an OpenAI-compatible embeddings endpoint whose vectors put words of one
// meaning on one axis, so "automobile" is near "car" with no word in common.
func embeddingServer(t *testing.T) *httptest.Server {
	t.Helper()
	axes := [][]string{{"car", "automobile", "vehicle", "tyres"}, {"banana", "fruit", "yellow"}, {"tax", "invoice", "vat"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/embeddings" || json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		out := struct {
			Object string         `json:"object"`
			Data   []datum        `json:"data"`
			Model  string         `json:"model"`
			Usage  map[string]int `json:"usage"`
		}{Object: "list", Model: "axes", Usage: map[string]int{"prompt_tokens": 1, "total_tokens": 1}}
		for i, text := range req.Input {
			v := make([]float64, len(axes)+1)
			v[len(axes)] = 0.05
			for _, w := range strings.Fields(strings.ToLower(text)) {
				for a, words := range axes {
					for _, x := range words {
						if strings.Trim(w, ".,?") == x {
							v[a]++
						}
					}
				}
			}
			var norm float64
			for _, x := range v {
				norm += x * x
			}
			for j := range v {
				v[j] /= math.Sqrt(norm)
			}
			out.Data = append(out.Data, datum{Object: "embedding", Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHybridRetrieval(t *testing.T) {
	t.Parallel()
	srv := embeddingServer(t)
	b := setup(t, withEmbeddings(srv.URL))
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	a.ingest(t, map[string]any{"title": "garage", "type": "text", "source": "Our garage fits new tyres on any car within the hour."})
	a.ingest(t, map[string]any{"title": "grocer", "type": "text", "source": "The grocer sells a ripe banana and other yellow fruit."})
	hits := a.search(t, "automobile servicing", nil)
	if len(hits) == 0 || sourceOf(hits[0])["title"] != "garage" {
		t.Fatalf("hybrid search %v", hits)
	}
}

// Deleting an agent takes its memory with it: its sources are gone at once and the sweep
// removes their chunks.
func TestBotDeletionPurgesMemory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	src := a.ingest(t, map[string]any{"title": "t", "type": "text", "source": "Beekeepers harvest honey in late summer."})
	res := b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/delete?" + a.query(""), Key: b.key, ContentType: "application/json"})
	expect(t, res, http.StatusOK, "")
	b.plan(t, b.planner(t, time.Hour), time.Now())
	if n, _ := b.db.Collection("chunks").CountDocuments(t.Context(), map[string]any{"source_id": src["id"]}); n != 0 {
		t.Fatalf("%d chunks left after the agent was deleted", n)
	}
}

// Retrieval reads a per-agent list of live sources derived from the sources. A crash between a
// source's write and its list's can only leave a ready source out, and the planner repairs it.
func TestLiveListIsRepaired(t *testing.T) {
	t.Parallel()
	// The list is changed behind the processes' backs below, with no notice: they see it when
	// their cached version token expires.
	b := setup(t, withCacheTTL(300*time.Millisecond))
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	a.ingest(t, map[string]any{"title": "t", "type": "text", "source": "Cartographers draw coastlines from survey notes."})
	// The source enters the list just before the write that makes it ready.
	for deadline := time.Now().Add(5 * time.Second); len(a.search(t, "cartographers coastlines", nil)) != 1; waitABit() {
		if time.Now().After(deadline) {
			t.Fatal("the ready source is never found")
		}
	}
	// The list's version token follows the list by a write of its own: wait for it, so that no
	// write of the ingestion lands after the crash below.
	for deadline := time.Now().Add(5 * time.Second); ; waitABit() {
		var docs []struct {
			ID string `bson:"_id"`
			V  string `bson:"v"`
		}
		cur, err := b.db.Collection("memory_live").Find(t.Context(), map[string]any{})
		if err != nil || cur.All(t.Context(), &docs) != nil {
			t.Fatal(err)
		}
		if len(docs) == 2 && docs[0].V != "" && docs[0].V == docs[1].V {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the list's version token never caught up: %v", docs)
		}
	}
	// The list lost the ready source (a crash after its entry was taken out for a re-sync that
	// then failed to say so).
	if _, err := b.db.Collection("memory_live").DeleteMany(t.Context(), map[string]any{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); len(a.search(t, "cartographers coastlines", nil)) != 0; waitABit() {
		if time.Now().After(deadline) {
			t.Fatal("a source missing from the list is still found past the cache's TTL")
		}
	}
	b.plan(t, b.planner(t, time.Hour), time.Now())
	if hits := a.search(t, "cartographers coastlines", nil); len(hits) != 1 {
		t.Fatalf("after the repair %v", hits)
	}
}
