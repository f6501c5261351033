package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"

	"github.com/agentplane/agentplane/api/apitest"
)

// site is a small web site the tests crawl: navigation, scripts, a footer, pages linking in a
// loop, a missing page, a PDF, Markdown, a slow page and an oversized one.
type site struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]string
	hits  atomic.Int64
}

const homePage = `<!doctype html><html><head><title>Teapot Works</title>
<link rel="icon" href="/static/icon.png"><style>body{color:red}</style>
<script>var tracking = "SECRET_SCRIPT_TEXT";</script></head>
<body><header><nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/missing">Gone</a>
<a href="/#top">Top</a> <a href="mailto:sales@example.com">Mail</a> <a href="https://example.org/elsewhere">Elsewhere</a></nav></header>
<main><article><h1>Ergonomic teapots</h1>
<p>Teapot Works ships pallets of ergonomic teapots to cafés across the northern provinces every Tuesday morning.
Every teapot is glazed twice and tested against boiling water for a full hour before it leaves the kiln.</p>
<p>Wholesale buyers receive a discount of twelve percent on orders above forty teapots, and delivery is free.</p>
</article></main><footer>FOOTER_TEXT copyright notice</footer></body></html>`

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{pages: map[string]string{
		"/": homePage,
		"/about": `<html><head><title>About Teapot Works</title></head><body><nav><a href="/">Home</a> <a href="/team">Team</a></nav>
<main><h1>About</h1><p>The founders brew oolong every afternoon and taste each new glaze with it before it goes on sale.</p>
<p>The workshop sits beside the old railway station and welcomes visitors on Saturdays.</p></main></body></html>`,
		"/team": `<html><head><title>Team</title></head><body><a href="/about">About</a><a href="/team">Team</a>
<p>Margarethe leads the kiln crew and has fired more than ten thousand teapots since she joined.</p></body></html>`,
		"/notes.md": "# Care notes\n\nRinse the teapot with warm water and never use soap on the unglazed base.\n\n- Dry it upside down.\n- Store it with the lid off.\n",
	}}
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.AddPage()
	pdf.SetFont("Helvetica", "", 12)
	pdf.MultiCell(0, 6, "Warranty terms: every teapot carries a five year warranty against cracks in the glaze.", "", "", false)
	var buf strings.Builder
	if err := pdf.Output(&buf); err != nil {
		t.Fatal(err)
	}
	s.pages["/warranty.pdf"] = buf.String()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		switch r.URL.Path {
		case "/slow":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			return
		case "/big":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body><p>" + strings.Repeat("huge ", 40_000) + "</p></body></html>"))
			return
		case "/image.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
			return
		case "/empty":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body><script>only()</script></body></html>"))
			return
		}
		s.mu.Lock()
		body, ok := s.pages[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, ".pdf"):
			w.Header().Set("Content-Type", "application/pdf")
		case strings.HasSuffix(r.URL.Path, ".md"):
			w.Header().Set("Content-Type", "text/markdown")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) set(path, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = body
}

// sources is a test's view of one agent's memory over HTTP.
type sourcesAPI struct {
	b     *bundle
	botID string
}

func (b *bundle) sources(t *testing.T) sourcesAPI {
	return sourcesAPI{b: b, botID: b.createBot(t, nil)["uuid"].(string)}
}

func (a sourcesAPI) body(m map[string]any) map[string]any {
	m["project_id"], m["bot_id"] = a.b.project.ID, a.botID
	return m
}

func (a sourcesAPI) query(extra string) string {
	return "project_id=" + a.b.project.ID + "&bot_id=" + a.botID + extra
}

// create creates a source and returns it as answered.
func (a sourcesAPI) create(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/source/create", Key: a.b.key, Body: a.body(body)})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["source"].(map[string]any)
}

// ingest creates a source and waits for its ingestion to end.
func (a sourcesAPI) ingest(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	return a.b.waitSource(t, a.botID, a.create(t, body)["id"].(string))
}

// search returns the passages retrieval finds for keywords.
func (a sourcesAPI) search(t *testing.T, keywords string, extra map[string]any) []map[string]any {
	t.Helper()
	hits, err := a.trySearch(keywords, extra)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// trySearch is search for a goroutine the test starts: what fails is its error.
func (a sourcesAPI) trySearch(keywords string, extra map[string]any) ([]map[string]any, error) {
	body := a.body(map[string]any{"keywords": keywords})
	for k, v := range extra {
		body[k] = v
	}
	res, err := a.b.client.Try(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/search", Key: a.b.key, Body: body})
	if err != nil {
		return nil, err
	}
	if res.Status != http.StatusOK {
		return nil, fmt.Errorf("search %q: status %d, want 200; body: %s", keywords, res.Status, res.Body)
	}
	var out struct{ Results []map[string]any }
	if err := json.Unmarshal(res.Body, &out); err != nil {
		return nil, fmt.Errorf("search %q: decoding body: %w: %s", keywords, err, res.Body)
	}
	return out.Results, nil
}

func sourceOf(p map[string]any) map[string]any { return p["source"].(map[string]any) }

func TestTextSourceLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.sources(t)

	created := a.create(t, map[string]any{"title": "Opening hours", "type": "text", "tags": []string{"hours", " hours ", ""},
		"source":      "The shop opens at nine in the morning and closes at six, except on Sundays when it stays closed.",
		"description": "When we are open", "forget_after": "1 month", "sync_frequency": nil, "status": "1"})
	if created["status"] != "processing" || created["type"] != "text" || created["forget_after"] != "1 month" || created["sync_frequency"] != "never" ||
		created["synced_at"] != nil || created["forget_after_at"] == nil || created["id"] == created["uuid"] {
		t.Fatalf("created %v", created)
	}
	if tags := created["tags"].([]any); len(tags) != 1 || tags[0] != "hours" {
		t.Fatalf("tags %v", tags)
	}
	done := b.waitSource(t, a.botID, created["uuid"].(string))
	if done["status"] != "success" || done["tokens"].(float64) < 15 || done["synced_at"] == nil || done["failure_reason"] != "" ||
		!strings.Contains(done["content"].(string), "closes at six") {
		t.Fatalf("ingested %v", done)
	}

	hits := a.search(t, "when does the shop close", nil)
	if len(hits) != 1 || !strings.Contains(hits[0]["text"].(string), "closes at six") {
		t.Fatalf("search %v", hits)
	}
	ref := sourceOf(hits[0])
	if ref["source_id"] != created["id"] || ref["title"] != "Opening hours" || ref["type"] != "text" {
		t.Fatalf("reference %v", ref)
	}
	if hits := a.search(t, "quantum chromodynamics", nil); len(hits) != 0 {
		t.Fatalf("unrelated search found %v", hits)
	}
	if hits := a.search(t, "shop close", map[string]any{"tags": []string{"other"}}); len(hits) != 0 {
		t.Fatalf("tag filter let through %v", hits)
	}
	if hits := a.search(t, "shop close", map[string]any{"source_ids": []string{created["uuid"].(string)}, "top": "3"}); len(hits) != 1 {
		t.Fatalf("source filter by uuid %v", hits)
	}

	res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/source/update", Key: b.key, Body: a.body(map[string]any{
		"source_id": created["id"], "title": "Hours", "tags": []string{"hours", "shop"}, "sync_frequency": "weekly", "type": "", "message": "left over"})})
	expect(t, res, http.StatusOK, "")
	if up := res.JSON(t)["source"].(map[string]any); up["title"] != "Hours" || up["sync_frequency"] != "weekly" || up["status"] != "success" {
		t.Fatalf("updated %v", up)
	}
	for _, tt := range []struct {
		query string
		want  int
	}{{"&tag=shop", 1}, {"&tag=none", 0}, {"&status=success", 1}, {"&status=failed", 0}, {"&type=text", 1}, {"&type=url", 0}, {"", 1}} {
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/source/readall?" + a.query(tt.query), Key: b.key})
		expect(t, res, http.StatusOK, "")
		if got := res.JSON(t)["total"]; got != float64(tt.want) {
			t.Errorf("readall%s total %v, want %d", tt.query, got, tt.want)
		}
	}

	res = b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/source/delete?" + a.query("&source_id="+created["uuid"].(string)),
		Key: b.key, ContentType: "application/json"})
	expect(t, res, http.StatusOK, "")
	if hits := a.search(t, "when does the shop close", nil); len(hits) != 0 {
		t.Fatalf("deleted source still found: %v", hits)
	}
	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/source/read?" + a.query("&source_id="+created["id"].(string)), Key: b.key})
	expect(t, res, http.StatusNotFound, "source_not_found")
	if n, err := b.db.Collection("chunks").CountDocuments(t.Context(), map[string]any{"source_id": created["id"]}); err != nil || n != 0 {
		t.Fatalf("%d chunks left after delete (%v)", n, err)
	}
	// The source's creation and deletion each made a version of the agent (bot.updated).
	evs := streamEvents(t, "", b.project.ID, 7)
	var ofSource, ofBot []string
	for _, typ := range eventTypes(evs) {
		if strings.HasPrefix(typ, "source.") {
			ofSource = append(ofSource, typ)
		} else {
			ofBot = append(ofBot, typ)
		}
	}
	if got := strings.Join(ofSource, " "); got != "source.created source.ready source.updated source.deleted" ||
		strings.Join(ofBot, " ") != "bot.created bot.updated bot.updated" {
		t.Fatalf("events %s", eventTypes(evs))
	}
}

func TestSourceValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.sources(t)
	valid := func(m map[string]any) map[string]any {
		out := map[string]any{"title": "t", "type": "text", "source": "some text"}
		for k, v := range m {
			out[k] = v
		}
		return a.body(out)
	}
	for _, tt := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"TitleRequired", valid(map[string]any{"title": " "}), "title"},
		{"TypeRequired", valid(map[string]any{"type": nil}), "type"},
		{"UnknownType", valid(map[string]any{"type": "video"}), "type"},
		{"SourceRequired", valid(map[string]any{"source": ""}), "source"},
		{"SourceWrongType", valid(map[string]any{"source": 42}), "source"},
		{"ForgetAfter", valid(map[string]any{"forget_after": "3 days"}), "forget_after"},
		{"SyncFrequency", valid(map[string]any{"sync_frequency": "daily"}), "sync_frequency"},
		{"TooManyTags", valid(map[string]any{"tags": strings.Fields("a b c d e f g h i j k l m n o p q r s t u")}), "tags"},
		{"TagsWrongType", valid(map[string]any{"tags": "a,b"}), "tags"},
		{"FileURL", valid(map[string]any{"type": "url", "source": "file:///etc/passwd"}), "source"},
		{"RelativeURL", valid(map[string]any{"type": "url", "source": "/about"}), "source"},
		{"CredentialsInURL", valid(map[string]any{"type": "url", "source": "http://user:secret@example.com/"}), "source"},
		{"GopherURL", valid(map[string]any{"type": "url", "source": "gopher://example.com/"}), "source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/source/create", Key: b.key, Body: tt.body})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		})
	}
	created := a.create(t, valid(nil))
	for _, tt := range []struct {
		name, method, path string
		body               map[string]any
		status             int
		field              string
	}{
		{"UpdateNeedsID", http.MethodPut, "/v1/bot/source/update", a.body(map[string]any{"title": "x"}), 422, "source_id"},
		{"UpdateCannotChangeType", http.MethodPut, "/v1/bot/source/update", a.body(map[string]any{"source_id": created["id"], "type": "url"}), 422, "type"},
		{"UpdateCannotChangeContent", http.MethodPut, "/v1/bot/source/update", a.body(map[string]any{"source_id": created["id"], "source": "other"}), 422, "source"},
		{"SyncUnknown", http.MethodPost, "/v1/bot/source/sync", a.body(map[string]any{"source_id": "nope"}), 404, ""},
		{"ReadNeedsID", http.MethodGet, "/v1/bot/source/read?" + a.query(""), nil, 422, "source_id"},
		{"ListBadStatus", http.MethodGet, "/v1/bot/source/readall?" + a.query("&status=done"), nil, 422, "status"},
		{"SearchNeedsKeywords", http.MethodPost, "/v1/bot/search", a.body(map[string]any{}), 422, "keywords"},
		{"SearchTopBounds", http.MethodPost, "/v1/bot/search", a.body(map[string]any{"keywords": "x", "top": 500}), 422, "top"},
		{"SearchExplainNotBoolean", http.MethodPost, "/v1/bot/search", a.body(map[string]any{"keywords": "x", "explain": "yes"}), 422, "explain"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: tt.method, Path: tt.path, Key: b.key, Body: tt.body})
			expect(t, res, tt.status, "")
			if tt.field != "" {
				expectField(t, res, tt.field)
			}
		})
	}
	t.Run("AnotherAccountCannotRead", func(t *testing.T) {
		otherKey, _ := b.newTenant(t)
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/source/read?" + a.query("&source_id="+created["id"].(string)), Key: otherKey})
		expect(t, res, http.StatusNotFound, "project_not_found")
	})
}

func TestURLSourceCrawl(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	s := newSite(t)

	src := a.ingest(t, map[string]any{"title": "Teapot Works", "type": "url", "source": s.URL + "/"})
	if src["status"] != "success" {
		t.Fatalf("crawl %v", src)
	}
	links := src["links"].([]any)
	var urls []string
	for _, l := range links {
		l := l.(map[string]any)
		urls = append(urls, strings.TrimPrefix(l["url"].(string), s.URL))
		if l["title"] == "" || l["tokens"].(float64) <= 0 || l["favicon"] == "" {
			t.Errorf("link %v", l)
		}
	}
	if got := strings.Join(urls, " "); got != "/ /about /team" {
		t.Fatalf("crawled %s", got)
	}
	if first := links[0].(map[string]any); first["title"] != "Teapot Works" || first["favicon"] != s.URL+"/static/icon.png" {
		t.Fatalf("first page %v", first)
	}
	content := src["content"].(string)
	for _, unwanted := range []string{"SECRET_SCRIPT_TEXT", "FOOTER_TEXT", "color:red"} {
		if strings.Contains(content, unwanted) {
			t.Errorf("content has %q: %s", unwanted, content)
		}
	}
	if !strings.Contains(content, "glazed twice") || !strings.Contains(content, "oolong") {
		t.Fatalf("content lacks the pages' text: %s", content)
	}
	hits := a.search(t, "who leads the kiln crew", nil)
	if len(hits) == 0 || hits[0]["page_url"] != s.URL+"/team" || hits[0]["page_title"] != "Team" {
		t.Fatalf("search %v", hits)
	}
	if ref := sourceOf(hits[0]); ref["url"] != s.URL+"/" || ref["favicon"] != s.URL+"/static/icon.png" || ref["type"] != "url" {
		t.Fatalf("reference %v", ref)
	}
}

func TestURLSourcePageLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{maxPages: 2})
	a := b.sources(t)
	s := newSite(t)
	src := a.ingest(t, map[string]any{"title": "Teapot Works", "type": "url", "source": s.URL})
	if links := src["links"].([]any); src["status"] != "success" || len(links) != 2 {
		t.Fatalf("crawl %v", src)
	}
}

func TestDocumentSources(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	s := newSite(t)
	for _, tt := range []struct {
		name, source, want, unwanted string
	}{
		{"InlineMarkdown", "# Returns\n\nReturn any **unused** teapot within *thirty days* for a full refund.", "thirty days", "**"},
		{"InlineHTML", "<html><body><script>nope()</script><p>Gift cards never expire and can be used online.</p></body></html>", "Gift cards never expire", "nope()"},
		{"InlinePlainText", "Plain text about descaling kettles with citric acid.", "citric acid", ""},
		{"PDFByURL", s.URL + "/warranty.pdf", "five year warranty", ""},
		{"MarkdownByURL", s.URL + "/notes.md", "never use soap", "# "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := a.ingest(t, map[string]any{"title": tt.name, "type": "document", "source": tt.source})
			content := src["content"].(string)
			if src["status"] != "success" || !strings.Contains(content, tt.want) || (tt.unwanted != "" && strings.Contains(content, tt.unwanted)) {
				t.Fatalf("document %v", src)
			}
		})
	}
	if hits := a.search(t, "warranty against cracks", nil); len(hits) == 0 || sourceOf(hits[0])["title"] != "PDFByURL" {
		t.Fatalf("search %v", hits)
	}
}

func TestSourceFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{fetchTimeout: 300 * time.Millisecond, maxBytes: 64 << 10})
	a := b.sources(t)
	s := newSite(t)
	t.Run("Each", func(t *testing.T) {
		for _, tt := range []struct {
			name, typ, path, reason string
		}{
			{"NotFound", "url", "/missing", "404"},
			{"Slow", "url", "/slow", "timed out"},
			{"Oversized", "url", "/big", "too large"},
			{"Image", "document", "/image.png", "image/png"},
			{"NoText", "url", "/empty", "no readable text"},
			// A name that does not resolve fails at once, as a 404 does, not after every retry.
			{"NoSuchHost", "url", "http://localhost./x", "the host does not exist"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				url := s.URL + tt.path
				if strings.HasPrefix(tt.path, "http") {
					url = tt.path
				}
				src := a.ingest(t, map[string]any{"title": tt.name, "type": tt.typ, "source": url})
				if src["status"] != "failed" || !strings.Contains(src["failure_reason"].(string), tt.reason) {
					t.Fatalf("source %v, want failed with %q", src, tt.reason)
				}
			})
		}
	})
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/source/readall?" + a.query("&status=failed"), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if got := res.JSON(t)["total"]; got != float64(6) {
		t.Fatalf("failed sources %v", got)
	}
}

// countingListener counts the connections a server accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func TestSourceFetchesAreGuarded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{guarded: true})
	a := b.sources(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingListener{Listener: ln}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("secret")) }))
	srv.Listener = counted
	srv.Start()
	t.Cleanup(srv.Close)
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	for _, target := range []string{
		"http://127.0.0.1:" + port + "/", "http://localhost:" + port + "/", "http://2130706433:" + port + "/",
		"http://0x7f000001:" + port + "/", "http://127.1:" + port + "/", "http://[::ffff:127.0.0.1]:" + port + "/",
		"http://127.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/",
	} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			for _, typ := range []string{"url", "document"} {
				src := a.ingest(t, map[string]any{"title": "t", "type": typ, "source": target})
				if reason := src["failure_reason"].(string); src["status"] != "failed" || !strings.Contains(reason, "blocked") && !strings.Contains(reason, "not allowed") {
					t.Fatalf("%s source of %s: %v", typ, target, src)
				}
			}
		})
	}
	t.Cleanup(func() {
		if n := counted.n.Load(); n != 0 {
			t.Errorf("the local listener accepted %d connections", n)
		}
	})
}

// ingestAttempts is how many times an ingestion is tried: once, and 8 retries.
const ingestAttempts = 9

// flakyPage is a page that answers with the statuses of answers in turn, then with the page
// (or, when failing is not zero, with failing for ever), counting the requests it gets.
type flakyPage struct {
	*httptest.Server
	requests atomic.Int64
}

func newFlakyPage(t *testing.T, failing int, answers ...int) *flakyPage {
	t.Helper()
	p := &flakyPage{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(p.requests.Add(1))
		switch {
		case n <= len(answers):
			http.Error(w, http.StatusText(answers[n-1]), answers[n-1])
		case failing != 0:
			http.Error(w, http.StatusText(failing), failing)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, `<html><head><title>Opening hours</title></head><body><main>
<p>The tea room opens at eight in the morning and closes at five in the afternoon on weekdays.</p></main></body></html>`)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

// A page that is missing or refused fails its source at once, without a retry; one whose server
// fails (5xx) is fetched again until it answers, or until the attempts run out.
func TestSourceFetchRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	for _, tt := range []struct {
		name     string
		failing  int
		answers  []int
		status   string
		reason   string
		requests int64
	}{
		{"NotFound", 0, []int{404}, "failed", "404", 1},
		{"Forbidden", 0, []int{403}, "failed", "403", 1},
		{"ServerErrorsThenThePage", 0, []int{503, 500}, "success", "", 3},
		{"ServerErrorForGood", 500, nil, "failed", "500", ingestAttempts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			page := newFlakyPage(t, tt.failing, tt.answers...)
			src := a.ingest(t, map[string]any{"title": tt.name, "type": "url", "source": page.URL + "/hours"})
			reason, _ := src["failure_reason"].(string)
			if src["status"] != tt.status || !strings.Contains(reason, tt.reason) {
				t.Fatalf("source %v, want %s with %q", src, tt.status, tt.reason)
			}
			if tt.status == "success" && !strings.Contains(src["content"].(string), "closes at five") {
				t.Fatalf("content %q", src["content"])
			}
			if n := page.requests.Load(); n != tt.requests {
				t.Fatalf("the page was requested %d times, want %d", n, tt.requests)
			}
		})
	}
}

// TestSearchExplain checks that a search with explain answers each passage's section and its
// score in parts, by term and field, adding up to its score, and that a search without it does
// not.
func TestSearchExplain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	// About 450 tokens of words of its own for each section, so that each is a chunk and none is a
	// near-duplicate of another (search shows a text and its near-duplicates once).
	filler := func(part string) string {
		words := make([]string, 300)
		for i := range words {
			words[i] = fmt.Sprintf("%s%d", part, i)
		}
		return strings.Join(words, " ")
	}
	a.ingest(t, map[string]any{"title": "Kettle manual", "type": "document", "source": "# Kettle manual\n\n" + filler("intro") +
		"\n\n## Descaling\n\nFill with water and citric acid, boil, and rinse twice.\n\n" + filler("descaling") +
		"\n\n## Warranty\n\nRepairs are free for two years after purchase.\n\n" + filler("warranty")})

	hits := a.search(t, "how do I descale with citric acid", map[string]any{"explain": true})
	matched := map[string]map[string][2]float64{} // section → term → occurrences in text and title
	for _, h := range hits {
		explain := h["explain"].(map[string]any)
		terms := map[string][2]float64{}
		sum := 0.0
		for _, x := range explain["terms"].([]any) {
			term := x.(map[string]any)
			terms[term["term"].(string)] = [2]float64{term["text"].(float64), term["title"].(float64)}
			sum += term["score"].(float64)
		}
		if lexical := explain["lexical"].(float64); math.Abs(sum-lexical) > 1e-9 || math.Abs(lexical-h["score"].(float64)) > 1e-9 {
			t.Errorf("%s: terms add up to %v, lexical %v, score %v: want all equal (lexical ranking)", h["chunk_id"], sum, lexical, h["score"])
		}
		matched[h["section"].(string)] = terms
	}
	if terms := matched["Kettle manual › Descaling"]; terms["descal"][1] != 1 {
		t.Errorf("passages by section and their terms %v: want one under Kettle manual › Descaling matching descal in its title", matched)
	}
	if terms := matched["Kettle manual"]; terms["citric"] != [2]float64{1, 0} {
		t.Errorf("passages by section and their terms %v: want the one holding the recipe to match citric in its text only", matched)
	}
	if hits := a.search(t, "how do I descale with citric acid", nil); len(hits) == 0 || hits[0]["explain"] != nil {
		t.Errorf("search without explain %v, want no explain", hits)
	}
}
