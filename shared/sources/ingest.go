package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/memory/text"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tasks"
)

// ErrPermanent marks an ingestion failure that retrying cannot mend (a refused or missing
// page, an unreadable document): the source has failed and the task must not be retried.
var ErrPermanent = errors.New("permanent ingestion failure")

// embedBatch is how many chunks go to the embeddings endpoint at once.
const embedBatch = 64

// Fetcher reads the pages of url sources: the SSRF-guarded client (shared/adapters/safehttp).
type Fetcher interface {
	// Read GETs url and reads its whole body: the final URL after redirects, the body's media
	// type (lowercased, without parameters) and the body.
	Read(ctx context.Context, url string) (final *url.URL, mediaType string, body []byte, err error)
	// Permanent reports whether an error of Read is one retrying cannot mend (an address the
	// guard refuses, an answer of 4xx, a body too large).
	Permanent(err error) bool
}

// Ingester does the workers' part of sources: ingestion, scheduled syncs and the sweep of
// forgotten sources.
type Ingester struct {
	repo     Repo
	events   *outbox.Dispatcher
	fetch    Fetcher
	embed    memory.Embedder
	maxPages int
	log      *slog.Logger
	now      func() time.Time
	// ingested is told of the text each ingestion read (the workers' metrics).
	ingested func(typ string, bytes int)
}

// NewIngester returns the ingester. Every fetch goes through fetch; embed may be nil; a url
// source crawls at most maxPages pages; ingested is called with the bytes of text each
// ingestion read, by source type.
func NewIngester(repo Repo, events *outbox.Dispatcher, fetch Fetcher, embed memory.Embedder, maxPages int, log *slog.Logger, ingested func(typ string, bytes int)) *Ingester {
	return &Ingester{repo: repo, events: events, fetch: fetch, embed: embed, maxPages: maxPages, log: log, ingested: ingested,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// SetClock replaces the ingester's clock (tests of expiry and sync).
func (g *Ingester) SetClock(now func() time.Time) { g.now = now }

// page is one document a source was read from.
type page struct {
	url, title, favicon, text string
	headings                  []text.Heading
}

// Ingest builds generation t.Gen of a source: fetch, extract, chunk, embed, store the chunks,
// then switch retrieval to them in one write and drop the old ones. A task whose generation is
// no longer pending (the source was deleted or ingested again since) does nothing. final says
// this is the task's last attempt: a failure then fails the source.
func (g *Ingester) Ingest(ctx context.Context, t tasks.SourceIngestPayload, final bool) error {
	src, err := g.repo.Load(ctx, t.SourceID)
	if apperr.As(err).Kind == apperr.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if src.Pending != t.Gen {
		// Superseded, or done by an earlier run of this task: only leftovers go.
		if src.Gen == t.Gen {
			return nil
		}
		return g.repo.DropGeneration(ctx, src.ID, t.Gen)
	}
	pages, err := g.collect(ctx, src)
	if err != nil {
		if final || errors.Is(err, ErrPermanent) {
			return g.fail(ctx, src, t.Gen, err)
		}
		return err
	}
	n := 0
	for _, p := range pages {
		n += len(p.text)
	}
	g.ingested(src.Type, n)
	return g.index(ctx, src, t.Gen, pages)
}

// Sync re-ingests a source whose scheduled sync is due.
func (g *Ingester) Sync(ctx context.Context, t tasks.SourceSyncPayload, final bool) error {
	gen := uuid.NewSHA1(uuid.NameSpaceURL, []byte(t.SourceID+"@"+t.Due.UTC().Format(time.RFC3339Nano))).String()
	src, err := g.repo.PendDue(ctx, t.SourceID, t.Due, gen, g.now())
	if apperr.As(err).Kind == apperr.NotFound || (err == nil && src.Pending != gen) {
		return nil
	}
	if err != nil {
		return err
	}
	return g.Ingest(ctx, tasks.SourceIngestPayload{SourceID: src.ID, Gen: gen}, final)
}

// collect reads the pages of a source.
func (g *Ingester) collect(ctx context.Context, src Source) ([]page, error) {
	switch {
	case src.Type == TypeURL:
		return g.crawl(ctx, src.Source)
	case src.Type == TypeDocument && isURL(src.Source):
		p, _, err := g.fetchPage(ctx, src.Source)
		if err != nil {
			return nil, err
		}
		return []page{p}, nil
	case src.Type == TypeDocument:
		doc, _, err := text.Extract([]byte(src.Source), "", nil)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPermanent, err)
		}
		return []page{{title: doc.Title, text: doc.Text, headings: doc.Headings}}, nil
	}
	return []page{{text: src.Source}}, nil
}

// fetchPage fetches and extracts one page; links are those an HTML page points to.
func (g *Ingester) fetchPage(ctx context.Context, raw string) (page, []string, error) {
	final, mediaType, body, err := g.fetch.Read(ctx, raw)
	var nerr net.Error
	switch {
	case err == nil:
	case g.fetch.Permanent(err):
		return page{}, nil, fmt.Errorf("%w: %v", ErrPermanent, err)
	case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout()):
		return page{}, nil, fmt.Errorf("fetching %q: timed out: %w", raw, err)
	default:
		return page{}, nil, err
	}
	doc, _, err := text.Extract(body, mediaType, final)
	if err != nil {
		return page{}, nil, fmt.Errorf("%w: %s: %v", ErrPermanent, final, err)
	}
	return page{url: final.String(), title: doc.Title, favicon: doc.Favicon, text: doc.Text, headings: doc.Headings}, doc.Links, nil
}

// crawl reads start and the pages of its site it links to, breadth first, each page once, up
// to maxPages. Only the first page must succeed; a failing later page is left out.
func (g *Ingester) crawl(ctx context.Context, start string) ([]page, error) {
	first, links, err := g.fetchPage(ctx, start)
	if err != nil {
		return nil, err
	}
	pages := []page{first}
	firstURL, _ := url.Parse(first.url)
	seen := map[string]bool{normal(start): true, normal(first.url): true}
	queue := links
	for len(queue) > 0 && len(pages) < g.maxPages {
		next := queue[0]
		queue = queue[1:]
		u, err := url.Parse(next)
		if err != nil || seen[normal(next)] || !sameSite(firstURL, u) || !pageLike(u) {
			continue
		}
		seen[normal(next)] = true
		p, more, err := g.fetchPage(ctx, next)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			g.log.Info("crawled page skipped", "url", next, "error", err)
			continue
		}
		if p.url != next && seen[normal(p.url)] {
			continue
		}
		seen[normal(p.url)] = true
		pages = append(pages, p)
		queue = append(queue, more...)
	}
	return pages, nil
}

// normal is the form of a URL two links to one page share.
func normal(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Fragment, u.RawFragment = "", ""
	u.Host = strings.ToLower(u.Host)
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// sameSite reports whether u is on the site of base: the same host, "www." aside.
func sameSite(base, u *url.URL) bool {
	host := func(h string) string { return strings.TrimPrefix(strings.ToLower(h), "www.") }
	return base != nil && (u.Scheme == "http" || u.Scheme == "https") && host(u.Host) == host(base.Host)
}

// skipExtensions are links that are not pages worth reading.
var skipExtensions = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".svg": true, ".webp": true, ".ico": true,
	".css": true, ".js": true, ".json": true, ".xml": true, ".zip": true, ".gz": true, ".tar": true,
	".mp3": true, ".mp4": true, ".avi": true, ".mov": true, ".woff": true, ".woff2": true, ".ttf": true,
	".exe": true, ".dmg": true, ".iso": true,
}

func pageLike(u *url.URL) bool { return !skipExtensions[strings.ToLower(path.Ext(u.Path))] }

// index stores the chunks of pages as generation gen and makes it the one retrieval reads.
func (g *Ingester) index(ctx context.Context, src Source, gen string, pages []page) error {
	now := g.now()
	hash := contentHash(pages)
	done := src
	done.Status, done.FailureReason, done.Pending, done.PendingSince = StatusSuccess, "", "", nil
	done.SyncedAt, done.NextSyncAt, done.UpdatedAt = &now, nextSync(src.SyncFrequency, now), now
	evType := outbox.SourceReady
	if src.Gen != "" {
		evType = outbox.SourceSynced
	}
	if src.Gen != "" && hash == src.ContentHash && src.Status == StatusSuccess {
		ev := sourceEvents.New(ctx, evType, src.ProjectID, src.BotID, done.public())
		ok, err := g.repo.Complete(ctx, done, gen, ev)
		if err == nil && ok {
			g.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: src.ID}, ev)
			g.log.Info("source unchanged", "source_id", src.ID)
		}
		return err
	}
	chunks, links, total := g.chunk(src, gen, pages)
	if total == 0 {
		return g.fail(ctx, src, gen, fmt.Errorf("%w: no readable text found", ErrPermanent))
	}
	if err := g.embedChunks(ctx, chunks); err != nil {
		return err
	}
	if err := g.repo.PutChunks(ctx, src.ID, gen, chunks); err != nil {
		return err
	}
	done.Gen, done.Chunks, done.ContentHash, done.Links, done.Tokens = gen, len(chunks), hash, links, total
	done.Content = storedContent(src.Type, pages)
	ev := sourceEvents.New(ctx, evType, src.ProjectID, src.BotID, done.public())
	ok, err := g.repo.Complete(ctx, done, gen, ev)
	if err != nil {
		return err
	}
	if !ok {
		return g.repo.DropGeneration(ctx, src.ID, gen)
	}
	g.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: src.ID}, ev)
	g.log.Info("source indexed", "source_id", src.ID, "pages", len(pages), "chunks", len(chunks), "tokens", total)
	if src.Gen == "" {
		return nil
	}
	return g.repo.DropGeneration(ctx, src.ID, src.Gen)
}

// chunk splits every page into chunks of generation gen.
func (g *Ingester) chunk(src Source, gen string, pages []page) ([]memory.Chunk, []Link, int) {
	var (
		chunks []memory.Chunk
		links  = []Link{}
		total  int
	)
	for _, p := range pages {
		split, tokens := text.SplitTokens(p.text, text.ChunkOptions{Headings: p.headings})
		total += tokens
		if p.url != "" {
			links = append(links, Link{URL: p.url, Title: p.title, Tokens: tokens, Favicon: p.favicon})
		}
		for _, c := range split {
			chunks = append(chunks, memory.Chunk{
				ID: memory.ChunkRef{SourceID: src.ID, Gen: gen, Position: len(chunks)}.ID(), ProjectID: src.ProjectID, BotID: src.BotID,
				SourceID: src.ID, Gen: gen, Position: len(chunks), Text: c.Text, Tokens: c.Tokens,
				PageURL: p.url, PageTitle: p.title, Section: c.Section, Tags: src.Tags,
			})
		}
	}
	return chunks, links, total
}

// embedChunks gives chunks their vectors when an embedder is configured.
func (g *Ingester) embedChunks(ctx context.Context, chunks []memory.Chunk) error {
	if g.embed == nil {
		return nil
	}
	for i := 0; i < len(chunks); i += embedBatch {
		batch := chunks[i:min(i+embedBatch, len(chunks))]
		texts := make([]string, len(batch))
		for j, c := range batch {
			texts[j] = c.Text
		}
		vecs, err := g.embed.Embed(ctx, texts)
		if err != nil {
			return err
		}
		for j := range batch {
			batch[j].Vector = vecs[j]
		}
	}
	return nil
}

// fail records why generation gen of src could not be built. The source keeps its previous
// chunks (a later sync may succeed) but is not retrieved while failed.
func (g *Ingester) fail(ctx context.Context, src Source, gen string, cause error) error {
	now := g.now()
	failed := src
	failed.Status, failed.Pending, failed.PendingSince, failed.UpdatedAt = StatusFailed, "", nil, now
	failed.FailureReason = clip(reason(cause), 1000)
	failed.NextSyncAt = nextSync(src.SyncFrequency, now)
	ev := sourceEvents.New(ctx, outbox.SourceFailed, src.ProjectID, src.BotID, failed.public())
	ok, err := g.repo.Complete(ctx, failed, gen, ev)
	if err != nil {
		return err
	}
	if ok {
		g.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: src.ID}, ev)
		g.log.Info("source failed", "source_id", src.ID, "reason", failed.FailureReason)
	}
	return fmt.Errorf("%w: %v", ErrPermanent, cause)
}

// Sweep forgets the sources past their forget time and purges the chunks of deleted ones.
func (g *Ingester) Sweep(ctx context.Context) error {
	const batch = 100
	for {
		now := g.now()
		expired, err := g.repo.Expired(ctx, now, batch)
		if err != nil {
			return err
		}
		for _, src := range expired {
			ev := sourceEvents.New(ctx, outbox.SourceExpired, src.ProjectID, src.BotID, src.public())
			if err := g.repo.Forget(ctx, src, now, ev); err != nil {
				return err
			}
			g.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: src.ID}, ev)
		}
		if len(expired) < batch {
			break
		}
	}
	for {
		n, err := g.repo.PurgeDeleted(ctx, batch)
		if err != nil || n < batch {
			return err
		}
	}
}

// reason is what users read of why a source failed: the first cause, without the wrapping
// of transport errors.
func reason(err error) string {
	msg := strings.TrimPrefix(err.Error(), ErrPermanent.Error()+": ")
	if i := strings.Index(msg, ": timed out: "); i >= 0 {
		return msg[:i] + ": timed out"
	}
	return msg
}

func contentHash(pages []page) string {
	h := sha256.New()
	for _, p := range pages {
		fmt.Fprintf(h, "%s\x00%s\x00", p.url, p.text)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// storedContent is the `content` the record keeps of pages: none for a text source, whose text
// is its source (public shows it), so the record does not hold it twice.
func storedContent(typ string, pages []page) string {
	if typ == TypeText {
		return ""
	}
	return clip(joinTexts(pages), MaxContentBytes)
}

func joinTexts(pages []page) string {
	var b strings.Builder
	for i, p := range pages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p.text)
	}
	return b.String()
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
