// Package memory is retrieval over agents' memory: the chunks ingested from their sources,
// ranked for a question and returned with the reference of the source they came from.
//
// MongoDB holds the chunks. Each process keeps them in memory, indexed in immutable segments,
// one per generation of a source (package index). A query reads the agent's live source
// generations from the store, one document per agent (so a source deleted, expired or
// re-ingested a moment ago is seen at once), and searches their segments, loading the ones it
// lacks. The list is kept too, and read again only when its version token, a small document
// beside it, changed: one small store read per query once the agent's memory is cached, none
// when the store's tokens are themselves cached (package cache: a process then sees a change
// when its notice reaches it, within milliseconds while NATS is up). Generations are never
// updated, only replaced, so the cache of segments cannot go stale.
package memory

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory/index"
)

// Bounds of a query.
const (
	DefaultTop = 5
	MaxTop     = 50
)

// Ref is a source as a passage cites it (the interface's source reference).
type Ref struct {
	CitationNumber int      `json:"citation_number"`
	SourceID       string   `json:"source_id"`
	Title          string   `json:"title"`
	URL            string   `json:"url"`
	Favicon        string   `json:"favicon"`
	Type           string   `json:"type"`
	Tags           []string `json:"tags"`
}

// Chunk is a passage of a source generation.
type Chunk struct {
	ID        string
	ProjectID string
	BotID     string
	SourceID  string
	Gen       string
	Position  int
	Text      string
	Tokens    int
	PageURL   string
	PageTitle string
	Section   string // path of the headings the chunk stands under (text.Chunk.Section)
	Tags      []string
	Vector    []float32
}

// title is what the chunk is indexed under besides its text: its page's title and its
// section. Chunks stored before sections were recorded have none, and are indexed under their
// page title alone.
func (c Chunk) title() string { return strings.TrimSpace(c.PageTitle + " " + c.Section) }

// ChunkRef locates a chunk: its source, generation and position.
type ChunkRef struct {
	SourceID string
	Gen      string
	Position int
}

// ID is the chunk's id: "<source>-<generation>-<position>". Source ids have no dash.
func (r ChunkRef) ID() string { return r.SourceID + "-" + r.Gen + "-" + strconv.Itoa(r.Position) }

// ParseChunkID is the inverse of ChunkRef.ID.
func ParseChunkID(id string) (ChunkRef, bool) {
	first, last := strings.IndexByte(id, '-'), strings.LastIndexByte(id, '-')
	if first <= 0 || last <= first+1 {
		return ChunkRef{}, false
	}
	pos, err := strconv.Atoi(id[last+1:])
	if err != nil {
		return ChunkRef{}, false
	}
	return ChunkRef{SourceID: id[:first], Gen: id[first+1 : last], Position: pos}, true
}

// Live is a generation of a source that retrieval may read: the source is ready, neither
// deleted nor past its forget time.
type Live struct {
	Ref    Ref
	Gen    string
	Chunks int
}

// Listed is a source in the agent's live list: its live generation and what queries filter it
// by.
type Listed struct {
	Live
	UUID     string
	ForgetAt *time.Time // nil: never forgotten
}

// Filter narrows a query to sources by id (or uuid) and by tag (any of them).
type Filter struct {
	SourceIDs []string
	Tags      []string
}

// keeps reports whether l is retrievable at now, in within (when it is not nil) and passes f.
func (f Filter) keeps(l Listed, now time.Time, within *Set) bool {
	switch {
	case l.ForgetAt != nil && !l.ForgetAt.After(now),
		within != nil && !within.Has(l.Ref.SourceID),
		len(f.SourceIDs) > 0 && !slices.Contains(f.SourceIDs, l.Ref.SourceID) && !slices.Contains(f.SourceIDs, l.UUID),
		len(f.Tags) > 0 && !slices.ContainsFunc(l.Ref.Tags, func(t string) bool { return slices.Contains(f.Tags, t) }):
		return false
	}
	return true
}

// Store reads what retrieval needs.
type Store interface {
	// LiveVersion returns the version token of the agent's live list, which changes after
	// every change of the list; "" when there is none.
	LiveVersion(ctx context.Context, botID string) (string, error)
	// Live reads the agent's live list, by source id, and the version token it carries (which
	// LiveVersion returns once the write that set it is complete; "" for an agent without one,
	// whose version is "" until its list's first write).
	Live(ctx context.Context, projectID, botID string) ([]Listed, string, error)
	// Generations returns the chunks of several source generations in one read, by
	// "<source id>/<generation>", up to the count of each (a generation removed meanwhile has
	// fewer or none).
	Generations(ctx context.Context, gens []Live) (map[string][]Chunk, error)
	// SourceSet returns the ids of the agent's set of sources of that digest (NotFound when
	// none is stored; an error, never other ids, when what is stored is not that set).
	SourceSet(ctx context.Context, botID, digest string) ([]string, error)
	// PutSourceSet stores the set of the agent's sources ids (sorted) under its digest; a set
	// stored already is left as it is.
	PutSourceSet(ctx context.Context, projectID, botID, digest string, ids []string) error
}

// Query asks the memory of one agent.
type Query struct {
	ProjectID string
	BotID     string
	Text      string
	Filter
	// Sources is the set of sources a version of the agent holds the query to (sources since
	// deleted or forgotten are not found all the same); nil: all of the agent's sources.
	Sources *SetRef
	// Top is how many passages to return: DefaultTop when 0, at most MaxTop.
	Top int
	// Explain asks for each passage's Explain: why it ranked where it did.
	Explain bool
}

// Passage is one retrieved chunk with its source.
type Passage struct {
	ChunkID   string  `json:"chunk_id"`
	Score     float64 `json:"score"`
	Text      string  `json:"text"`
	Position  int     `json:"position"`
	PageURL   string  `json:"page_url"`
	PageTitle string  `json:"page_title"`
	Section   string  `json:"section"`
	Source    Ref     `json:"source"`
	// Explain is why the passage ranked where it did, when the query asked (Query.Explain).
	Explain *Explanation `json:"explain,omitempty"`
}

// Heading names where a passage comes from, as a model is shown it above the passage: the
// source's title, the page's title when it says more, and the section path, joined by " › "
// ("Kettle manual › Descaling").
func (p Passage) Heading() string {
	var parts []string
	for _, s := range []string{p.Source.Title, p.PageTitle, p.Section} {
		s = strings.TrimSpace(s)
		if s == "" || len(parts) > 0 && strings.HasPrefix(s, parts[len(parts)-1]) {
			if s != "" {
				parts[len(parts)-1] = s
			}
			continue
		}
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " › ")
}

// Explanation is a passage's score in parts: its BM25 score term by term and field by field
// (index.Explanation), and the cosine similarity of its embedding to the question's. Score is
// the BM25 score when the ranking is lexical, else the fusion of both rankings.
type Explanation struct {
	index.Explanation
	Vector float64 `json:"vector"`
}

// Memory answers queries over the stored chunks.
type Memory struct {
	store Store
	embed Embedder
	cache *cache
	loads singleflight.Group
	log   *slog.Logger
	now   func() time.Time
}

// New returns retrieval over store, with an index cache of at most cacheBytes. embed may be nil
// (lexical ranking only).
func New(store Store, embed Embedder, cacheBytes int64, log *slog.Logger) *Memory {
	return &Memory{store: store, embed: embed, cache: newCache(cacheBytes), log: log, now: time.Now}
}

// SetClock replaces the clock that decides which sources are forgotten (tests).
func (m *Memory) SetClock(now func() time.Time) { m.now = now }

// CheckTop validates a requested number of passages (0 is the default).
func CheckTop(top int) error {
	if top < 0 || top > MaxTop {
		return apperr.Invalidf("top", "must be between 1 and %d", MaxTop)
	}
	return nil
}

// Search returns the passages of the agent's memory that best answer q, best first, each text
// once: near-duplicates are collapsed into the best-ranked of them ([Distinct]).
func (m *Memory) Search(ctx context.Context, q Query) ([]Passage, error) {
	if err := CheckTop(q.Top); err != nil {
		return nil, err
	}
	if q.Top == 0 {
		q.Top = DefaultTop
	}
	live, gens, err := m.generations(ctx, q)
	if err != nil || len(gens) == 0 {
		return []Passage{}, err
	}
	byKey := make(map[string]*generation, len(gens))
	for i, g := range gens {
		byKey[live[i].key()] = g
	}
	segs := m.segments(q, live, gens)
	iq := index.Query{Text: q.Text, Vector: m.queryVector(ctx, q.Text), Top: q.Top}
	hits := Distinct(segs, iq, func(id string) (string, bool) {
		c, ok := chunkOf(byKey, id)
		return c.Text, ok
	})
	refs := make(map[string]Ref, len(live))
	for _, l := range live {
		refs[l.Ref.SourceID] = l.Ref
	}
	out := make([]Passage, 0, len(hits))
	for _, h := range hits {
		c, _ := chunkOf(byKey, h.ID) // Distinct keeps only the hits found
		p := Passage{ChunkID: c.ID, Score: h.Score, Text: c.Text, Position: c.Position,
			PageURL: c.PageURL, PageTitle: c.PageTitle, Section: c.Section, Source: refs[c.SourceID]}
		if q.Explain {
			p.Explain = &Explanation{Explanation: index.Explain(segs, iq, index.Doc{Text: c.Text, Title: c.title()}), Vector: h.Vector}
		}
		out = append(out, p)
	}
	return out, nil
}

// chunkOf finds the chunk id among the generations gens, by "<source id>/<generation>".
func chunkOf(gens map[string]*generation, id string) (Chunk, bool) {
	loc, _ := ParseChunkID(id)
	g := gens[loc.SourceID+"/"+loc.Gen]
	if g == nil || loc.Position >= len(g.chunks) {
		return Chunk{}, false
	}
	return g.chunks[loc.Position], true
}

func (l Live) key() string { return l.Ref.SourceID + "/" + l.Gen }

// mergeBelow is the number of chunks under which a generation's segment is searched merged
// with the agent's other small ones: a query pays a fixed cost per segment, which an agent
// with hundreds of small sources would otherwise pay hundreds of times.
const mergeBelow = 1000

// merged is the segment of some small generations merged into one, and the digest of the list of
// their keys.
type merged struct {
	sum [sha256.Size]byte
	seg *index.Segment
}

// mergedKept is how many merged segments an agent keeps, one per list of generations: an agent
// whose versions hold different sets (its published version and its draft, or a canary) is
// asked over as many lists at once.
const mergedKept = 3

// mergedSegs are an agent's merged segments, the newest first.
type mergedSegs []*merged

func (ms mergedSegs) bytes() int64 {
	var n int64
	for _, mg := range ms {
		n += int64(mg.seg.Bytes())
	}
	return n
}

// segments returns the segments a query over the generations gens of live searches: the
// large ones as they are and the small ones merged into one, cached for the agent with the list
// of their keys (generations never change, so it cannot go stale): a query over another list
// builds its own, which replaces the agent's oldest past mergedKept, so an agent whose sources
// change keeps a few merged segments, not one per list it had. A filtered query searches them
// one by one, so that the cache does not fill with a merged segment per filter.
func (m *Memory) segments(q Query, live []Live, gens []*generation) []*index.Segment {
	segs := make([]*index.Segment, 0, len(gens))
	var small []*index.Segment
	var names []byte
	for i, g := range gens {
		if g.seg.Len() >= mergeBelow || len(q.SourceIDs) > 0 || len(q.Tags) > 0 {
			segs = append(segs, g.seg)
			continue
		}
		small = append(small, g.seg)
		names = append(append(append(append(names, live[i].Ref.SourceID...), '/'), live[i].Gen...), 0)
	}
	if len(small) < 2 {
		return append(segs, small...)
	}
	sum := sha256.Sum256(names)
	key := "merged:" + q.ProjectID + "/" + q.BotID
	kept, _ := m.cache.get(key).(mergedSegs)
	if i := slices.IndexFunc(kept, func(mg *merged) bool { return mg.sum == sum }); i >= 0 {
		return append(segs, kept[i].seg)
	}
	v, _, _ := m.loads.Do(key+"@"+string(sum[:]), func() (any, error) {
		seg, ok := index.Merge(small)
		if !ok {
			return (*merged)(nil), nil
		}
		mg := &merged{sum: sum, seg: seg}
		kept, _ := m.cache.get(key).(mergedSegs)
		m.cache.put(key, append(mergedSegs{mg}, kept[:min(len(kept), mergedKept-1)]...))
		return mg, nil
	})
	if mg := v.(*merged); mg != nil {
		return append(segs, mg.seg)
	}
	return append(segs, small...)
}

// generation is a source generation in memory: its chunks and their index.
type generation struct {
	seg    *index.Segment
	chunks []Chunk // by position
}

// bytes estimates the memory a generation holds.
func (g *generation) bytes() int64 {
	n := int64(g.seg.Bytes())
	for _, c := range g.chunks {
		n += int64(len(c.ID)+len(c.Text)+len(c.PageURL)+len(c.PageTitle)+len(c.Section)) + 160
	}
	return n
}

// generations returns the live generations of q's agent (of its set of sources, when q names
// one), each with its chunks in memory; the
// ones not cached are read in one go. A generation whose chunks were replaced between the two
// reads is seen as incomplete, and the live list is read again: a reader sees the old chunks
// or the new ones, never none or both.
func (m *Memory) generations(ctx context.Context, q Query) ([]Live, []*generation, error) {
	var within *Set
	if q.Sources != nil {
		var err error
		if within, err = m.Set(ctx, q.BotID, *q.Sources); err != nil {
			return nil, nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		listed, err := m.listed(ctx, q.ProjectID, q.BotID, attempt > 0)
		if err != nil {
			return nil, nil, err
		}
		now := m.now()
		var live []Live
		for _, l := range listed {
			if q.Filter.keeps(l, now, within) {
				live = append(live, l.Live)
			}
		}
		gens, missing := m.cache.lookup(live)
		if len(missing) > 0 {
			err = m.fill(ctx, q, live, gens, missing)
		}
		if errors.Is(err, errIncomplete) && attempt == 0 {
			continue
		}
		return live, gens, err
	}
}

// liveList is an agent's live list as read at a version token.
type liveList struct {
	version string
	listed  []Listed
}

func (l *liveList) bytes() int64 {
	n := int64(len(l.version)) + 64
	for _, e := range l.listed {
		n += int64(len(e.Ref.SourceID)+len(e.Ref.Title)+len(e.Ref.URL)+len(e.Ref.Favicon)+len(e.Ref.Type)+len(e.Gen)+len(e.UUID)) + 200
		for _, t := range e.Ref.Tags {
			n += int64(len(t)) + 16
		}
	}
	return n
}

// listed returns the agent's live list: the cached one while its version token is the
// store's, else (when none is cached, or when fresh) the one read from the store, kept with the
// token it carries. A process that has no list of the agent yet reads the list alone: the token
// it carries is the list's own, so the next query's token read tells whether it changed since.
func (m *Memory) listed(ctx context.Context, projectID, botID string, fresh bool) ([]Listed, error) {
	key := "live:" + projectID + "/" + botID
	if l, ok := m.cache.get(key).(*liveList); ok && !fresh {
		version, err := m.store.LiveVersion(ctx, botID)
		if err != nil {
			return nil, err
		}
		if version == l.version {
			return l.listed, nil
		}
	}
	listed, version, err := m.store.Live(ctx, projectID, botID)
	if err != nil {
		return nil, err
	}
	m.cache.put(key, &liveList{version: version, listed: listed})
	return listed, nil
}

// fill loads the generations missing from gens. Concurrent queries of one agent with a cold
// cache read its chunks once; what the shared load did not cover is read after it.
func (m *Memory) fill(ctx context.Context, q Query, live []Live, gens []*generation, missing []Live) error {
	v, err, _ := m.loads.Do(q.ProjectID+"/"+q.BotID, func() (any, error) { return m.load(context.WithoutCancel(ctx), missing) })
	if err != nil {
		return err
	}
	loaded := v.(map[string]*generation)
	var rest []Live
	for i, l := range live {
		if gens[i] == nil {
			if gens[i] = loaded[l.key()]; gens[i] == nil {
				rest = append(rest, l)
			}
		}
	}
	if len(rest) == 0 {
		return nil
	}
	more, err := m.load(ctx, rest)
	if err != nil {
		return err
	}
	for i, l := range live {
		if gens[i] == nil {
			gens[i] = more[l.key()]
		}
	}
	return nil
}

// errIncomplete marks a generation that lost chunks while it was read: it was replaced.
var errIncomplete = apperr.New(apperr.Conflict, "generation_replaced", "the source was re-indexed while it was read")

// load reads the chunks of generations and indexes them, all or none: a generation with fewer
// chunks than its source says was replaced while it was read.
func (m *Memory) load(ctx context.Context, gens []Live) (map[string]*generation, error) {
	chunks, err := m.store.Generations(ctx, gens)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*generation, len(gens))
	for _, l := range gens {
		cs := chunks[l.key()]
		if len(cs) != l.Chunks {
			return nil, errIncomplete
		}
		slices.SortFunc(cs, func(a, b Chunk) int { return a.Position - b.Position })
		docs := make([]index.Doc, len(cs))
		for i, c := range cs {
			if c.Position != i {
				return nil, errIncomplete
			}
			docs[i] = index.Doc{ID: c.ID, Text: c.Text, Title: c.title(), Vector: c.Vector}
			cs[i].Vector = nil
		}
		g := &generation{seg: index.NewSegment(docs), chunks: cs}
		m.cache.put(l.key(), g)
		out[l.key()] = g
	}
	return out, nil
}

// queryVector embeds the question when an embedder is configured; on failure the query is
// answered lexically.
func (m *Memory) queryVector(ctx context.Context, text string) []float32 {
	if m.embed == nil {
		return nil
	}
	vecs, err := m.embed.Embed(ctx, []string{text})
	if err != nil || len(vecs) != 1 {
		m.log.Warn("query embedding failed; ranking lexically", "error", err)
		return nil
	}
	return vecs[0]
}
