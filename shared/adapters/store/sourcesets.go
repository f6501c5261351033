package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/memory"
)

// sourceSetsColl holds the sets of memory sources agents' versions record, each once: its _id is
// the agent's id and the set's digest (sourceSetID), and it never changes. A set of at most
// maxInline ids holds them (ids, as every set did before pages); a larger one names the root of
// its tree of pages in sourceSetPagesColl and the root's level.
const sourceSetsColl = "source_sets"

// sourceSetPagesColl holds the pages of the sets of sources: a set's sorted ids cut into leaf
// pages (level 0) where the ids' contents say (pageEnds), the digests of those pages cut the same
// way into pages of level 1, and so on up to one root. Each page is stored once per agent under
// its digest (pageDigest) and never changes, so sets that differ by a few ids share all their
// pages but those on the paths to the ids that differ: a set of n ids one id larger than a set
// stored already costs about one page per level, O(log n), not n ids.
const sourceSetPagesColl = "source_set_pages"

// Pages end after an entry whose hash has its low bits zero, leafBits of them in leaves (64 ids
// a page on average: a set of n ids is read in n/64 pages) and pageBits above (32 digests: the
// pages above are rewritten on each change of the set, and a digest is larger than an id), or
// at 4 times that many entries whatever their hashes (so that no ids, however chosen, make one
// large page).
const (
	leafBits = 6
	pageBits = 5
)

// maxInline is the most ids a set keeps in its document.
const maxInline = 128

// maxFind bounds the _ids of one find by a list of _ids (the embedded store reads at most this
// many one by one by their _id).
const maxFind = 1000

type sourceSetDoc struct {
	ID        string   `bson:"_id"`
	ProjectID string   `bson:"project_id"`
	BotID     string   `bson:"bot_id"`
	IDs       []string `bson:"ids,omitempty"`
	Root      string   `bson:"root,omitempty"`
	Level     int      `bson:"level,omitempty"`
}

type pageDoc struct {
	ID        string   `bson:"_id"`
	ProjectID string   `bson:"project_id"`
	BotID     string   `bson:"bot_id"`
	Level     int      `bson:"level"`
	Entries   []string `bson:"entries"`
}

// page is a page of a set's tree: its level, its entries (source ids at level 0, else the
// digests of the pages below) and its digest.
type page struct {
	level   int
	entries []string
	digest  string
}

func sourceSetID(botID, digest string) string { return botID + "/" + digest }

// pageDigest is the digest of a page: the hex SHA-256 of its level in decimal and its entries,
// each followed by a newline.
func pageDigest(level int, entries []string) string {
	h := sha256.New()
	h.Write(strconv.AppendInt(nil, int64(level), 10))
	h.Write([]byte{'\n'})
	for _, e := range entries {
		h.Write([]byte(e))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pageEnds reports whether a page ends after entry e: its 64-bit FNV-1a hash, mixed (the
// finaliser of MurmurHash3, for FNV's low bits follow the input's too closely), has its bits
// low bits zero.
func pageEnds(e string, bits int) bool {
	f := fnv.New64a()
	f.Write([]byte(e))
	x := f.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x&(1<<bits-1) == 0
}

// paginate cuts the entries of a level into its pages.
func paginate(level int, entries []string) []page {
	bits := pageBits
	if level == 0 {
		bits = leafBits
	}
	var pages []page
	start := 0
	for i, e := range entries {
		if i+1 == len(entries) || i+1-start == 4<<bits || pageEnds(e, bits) {
			pages = append(pages, page{level: level, entries: entries[start : i+1], digest: pageDigest(level, entries[start:i+1])})
			start = i + 1
		}
	}
	return pages
}

// tree is the set of sorted ids in pages, by level: the leaves first, the root alone last.
func tree(sorted []string) [][]page {
	levels := [][]page{paginate(0, sorted)}
	for top := levels[0]; len(top) > 1; top = levels[len(levels)-1] {
		digests := make([]string, len(top))
		for i, p := range top {
			digests[i] = p.digest
		}
		levels = append(levels, paginate(len(levels), digests))
	}
	return levels
}

// SourceSet reads the set's document, then its pages level by level, one find (or one per
// maxFind pages) a level, and checks every page's digest and the digest of the ids: a set that
// does not read back whole and as it was stored is an error, never another set.
func (m Memory) SourceSet(ctx context.Context, botID, digest string) ([]string, error) {
	var d sourceSetDoc
	if err := m.db.Collection(sourceSetsColl).FindOne(ctx, bson.D{{Key: "_id", Value: sourceSetID(botID, digest)}}).Decode(&d); err != nil {
		return nil, wrap(err, "source_set")
	}
	ids := d.IDs
	if d.Root != "" {
		var err error
		if ids, err = m.readPages(ctx, botID, d.Root, d.Level); err != nil {
			return nil, fmt.Errorf("source set %s of agent %s: %w", digest, botID, err)
		}
	}
	if got := memory.SetDigest(ids); got != digest {
		return nil, fmt.Errorf("source set %s of agent %s: its %d ids read back have the digest %s", digest, botID, len(ids), got)
	}
	return ids, nil
}

// readPages reads the tree of the agent's pages whose root is at level, down to its leaves, and
// returns their entries in order.
func (m Memory) readPages(ctx context.Context, botID, root string, level int) ([]string, error) {
	want := []string{root}
	for ; ; level-- {
		got, err := m.pages(ctx, botID, want, false)
		if err != nil {
			return nil, err
		}
		var entries []string
		for _, digest := range want {
			p, ok := got[digest]
			switch {
			case !ok:
				return nil, fmt.Errorf("page %s of level %d is missing", digest, level)
			case p.Level != level || pageDigest(p.Level, p.Entries) != digest:
				return nil, fmt.Errorf("page %s of level %d holds a level %d page of another digest", digest, level, p.Level)
			}
			entries = append(entries, p.Entries...)
		}
		for _, digest := range want {
			m.known.add(sourceSetID(botID, digest))
		}
		if level <= 0 {
			return entries, nil
		}
		want = entries
	}
}

// pages reads the agent's pages of those digests that are stored, by digest, maxFind at a time;
// only their _ids when idsOnly.
func (m Memory) pages(ctx context.Context, botID string, digests []string, idsOnly bool) (map[string]pageDoc, error) {
	got := make(map[string]pageDoc, len(digests))
	for batch := range slices.Chunk(digests, maxFind) {
		ids := make([]string, len(batch))
		for i, d := range batch {
			ids[i] = sourceSetID(botID, d)
		}
		opts := options.Find()
		if idsOnly {
			opts.SetProjection(bson.D{{Key: "_id", Value: 1}})
		}
		cur, err := m.db.Collection(sourceSetPagesColl).Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, opts)
		if err != nil {
			return nil, wrap(err, "source_set_page")
		}
		var docs []pageDoc
		if err := cur.All(ctx, &docs); err != nil {
			return nil, wrap(err, "source_set_page")
		}
		for _, d := range docs {
			got[d.ID[len(botID)+1:]] = d
		}
	}
	return got, nil
}

// PutSourceSet stores the set's document once (a set stored already is left as it is), after its
// pages when it has more than maxInline ids: those of its pages that are not stored yet, found from
// the root down (a page stored has all the pages below it stored: each write of pages goes from
// the leaves up and stops at its first failure), written in one ordered insert.
func (m Memory) PutSourceSet(ctx context.Context, projectID, botID, digest string, ids []string) error {
	d := sourceSetDoc{ID: sourceSetID(botID, digest), ProjectID: projectID, BotID: botID, IDs: ids}
	if len(ids) > maxInline {
		levels := tree(ids)
		if err := m.putPages(ctx, projectID, botID, levels); err != nil {
			return err
		}
		d.IDs, d.Root, d.Level = nil, levels[len(levels)-1][0].digest, len(levels)-1
	}
	_, err := m.db.Collection(sourceSetsColl).InsertOne(ctx, d)
	if mongo.IsDuplicateKeyError(err) {
		return nil
	}
	return wrap(err, "source_set")
}

// putPages stores those of the tree's pages that are not stored yet. It asks the store only about
// pages it does not know to be stored (knownPages).
func (m Memory) putPages(ctx context.Context, projectID, botID string, levels [][]page) error {
	var missing []page // from the root down
	want := levels[len(levels)-1]
	for level := len(levels) - 1; ; level-- {
		var unknown []string
		for _, p := range want {
			if !m.known.has(sourceSetID(botID, p.digest)) {
				unknown = append(unknown, p.digest)
			}
		}
		stored, err := m.pages(ctx, botID, unknown, true)
		if err != nil {
			return err
		}
		below := map[string]bool{}
		for _, p := range want {
			switch id := sourceSetID(botID, p.digest); {
			case m.known.has(id):
			case stored[p.digest].ID != "":
				m.known.add(id)
			default:
				missing = append(missing, p)
				for _, e := range p.entries {
					below[e] = true
				}
			}
		}
		if level == 0 || len(below) == 0 {
			break
		}
		want = slices.DeleteFunc(slices.Clone(levels[level-1]), func(p page) bool { return !below[p.digest] })
	}
	slices.Reverse(missing)
	docs := make([]any, len(missing))
	for i, p := range missing {
		docs[i] = pageDoc{ID: sourceSetID(botID, p.digest), ProjectID: projectID, BotID: botID, Level: p.level, Entries: p.entries}
	}
	// Ordered, from the leaves up: a page is written only once those before it are. A page
	// another write stored meanwhile (with the pages below it) is passed over.
	for len(docs) > 0 {
		_, err := m.db.Collection(sourceSetPagesColl).InsertMany(ctx, docs)
		written := len(docs)
		var bulk mongo.BulkWriteException
		if err != nil {
			if !errors.As(err, &bulk) || bulk.WriteConcernError != nil || len(bulk.WriteErrors) != 1 || !mongo.IsDuplicateKeyError(bulk.WriteErrors[0]) {
				return wrap(err, "source_set_page")
			}
			written = bulk.WriteErrors[0].Index + 1
		}
		for _, d := range docs[:written] {
			m.known.add(d.(pageDoc).ID)
		}
		docs = docs[written:]
	}
	return nil
}

// knownMax bounds the pages a process knows to be stored (about 100 bytes each), in each of
// knownPages's halves.
const knownMax = 20_000

// knownPages are the pages this process stored or read (by _id), which it need not ask the store
// about again: pages are never changed nor deleted, so a page stored once stays so, with the
// pages below it. When its newer half holds knownMax pages, it becomes the older half (the older
// is forgotten).
type knownPages struct {
	mu           sync.Mutex
	newer, older map[string]struct{}
}

func newKnownPages() *knownPages { return &knownPages{newer: map[string]struct{}{}} }

func (k *knownPages) has(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, newer := k.newer[id]
	_, older := k.older[id]
	return newer || older
}

func (k *knownPages) add(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.newer) == knownMax {
		k.older, k.newer = k.newer, make(map[string]struct{}, knownMax)
	}
	k.newer[id] = struct{}{}
}
