package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
)

const (
	sourcesColl = "sources"
	chunksColl  = "chunks"
)

// Sources stores memory sources and their chunks.
type Sources struct {
	db *mongo.Database
	// liveChanged is told of every change of an agent's live list, once it is written (nil: no
	// one is told).
	liveChanged func(botID string)
}

var _ sources.Repo = Sources{}

// NewSources returns the source repository of db.
func NewSources(db *mongo.Database) Sources { return Sources{db: db} }

// OnLiveChange returns r telling changed of every change of an agent's live list, right after
// the write that made it (and before the source's own write when a source becomes ready): the
// caches of the lists' versions are dropped by it.
func (r Sources) OnLiveChange(changed func(botID string)) Sources {
	r.liveChanged = changed
	return r
}

func (r Sources) coll() *mongo.Collection { return r.db.Collection(sourcesColl) }

func (r Sources) chunks() *mongo.Collection { return r.db.Collection(chunksColl) }

func (r Sources) Insert(ctx context.Context, s sources.Source, ev outbox.Event) error {
	s, err := r.keepApart(ctx, s)
	if err != nil {
		return err
	}
	return insertWithEvent(ctx, r.coll(), s, ev, sources.Resource)
}

func (r Sources) Get(ctx context.Context, projectID, botID, idOrUUID string) (sources.Source, error) {
	var s sources.Source
	filter := append(byIDOrUUID(projectID, idOrUUID), bson.E{Key: "bot_id", Value: botID})
	err := r.coll().FindOne(ctx, filter).Decode(&s)
	return r.withText(ctx, s, wrap(err, sources.Resource))
}

func (r Sources) List(ctx context.Context, projectID, botID string, f sources.ListFilter, page paging.Page) ([]sources.Source, int, error) {
	filter := bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted}
	for key, v := range map[string]string{"tags": f.Tag, "type": f.Type, "status": f.Status} {
		if v != "" {
			filter = append(filter, bson.E{Key: key, Value: v})
		}
	}
	list := []sources.Source{}
	total, err := findPage(ctx, r.coll(), filter, page, &list)
	if err != nil {
		return list, total, wrap(err, sources.Resource)
	}
	return list, total, r.withTexts(ctx, list)
}

func (r Sources) IDs(ctx context.Context, projectID, botID string) ([]string, error) {
	cur, err := r.coll().Find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap(err, sources.Resource)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap(err, sources.Resource)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}

func (r Sources) Update(ctx context.Context, s sources.Source, ev outbox.Event) error {
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: s.ID}, {Key: "rev", Value: s.Rev - 1}, notDeleted},
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "title", Value: s.Title}, {Key: "description", Value: s.Description}, {Key: "tags", Value: s.Tags},
			{Key: "forget_after", Value: s.ForgetAfter}, {Key: "forget_after_at", Value: s.ForgetAfterAt},
			{Key: "sync_frequency", Value: s.SyncFrequency}, {Key: "next_sync_at", Value: s.NextSyncAt},
			{Key: "updated_at", Value: s.UpdatedAt}, {Key: "rev", Value: s.Rev}, {Key: slot(ev.ID), Value: ev},
		}}})
	if err != nil {
		return wrap(err, sources.Resource)
	}
	if res.MatchedCount == 0 {
		return apperr.New(apperr.Conflict, "source_changed", "The source was changed or deleted by another request; read it and retry.")
	}
	if err := r.refreshLive(ctx, s); err != nil {
		return err
	}
	_, err = r.chunks().UpdateMany(ctx, bson.D{{Key: "source_id", Value: s.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "tags", Value: s.Tags}}}})
	return wrap(err, sources.Resource)
}

func (r Sources) Delete(ctx context.Context, s sources.Source, at time.Time, ev outbox.Event) error {
	if err := r.removeLive(ctx, s); err != nil {
		return err
	}
	if err := tombstone(ctx, r.coll(), s.ID, at, ev, sources.Resource); err != nil {
		return err
	}
	return r.purge(ctx, s.ID)
}

// purge removes every chunk and the text of a deleted source and marks it purged.
func (r Sources) purge(ctx context.Context, id string) error {
	if _, err := r.chunks().DeleteMany(ctx, bson.D{{Key: "source_id", Value: id}}); err != nil {
		return wrap(err, sources.Resource)
	}
	if err := r.dropText(ctx, id); err != nil {
		return err
	}
	_, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "purged", Value: true}}}})
	return wrap(err, sources.Resource)
}

// findUpdate applies update to the live source id matching cond and returns it as it is
// afterwards; when cond does not match, the source as it is.
func (r Sources) findUpdate(ctx context.Context, id string, cond bson.D, update bson.D) (sources.Source, error) {
	var s sources.Source
	filter := append(bson.D{{Key: "_id", Value: id}, notDeleted}, cond...)
	err := r.coll().FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&s)
	if err == mongo.ErrNoDocuments {
		return r.Load(ctx, id)
	}
	return r.withText(ctx, s, wrap(err, sources.Resource))
}

func (r Sources) Pend(ctx context.Context, id, from, gen string, at time.Time) (sources.Source, error) {
	s, err := r.findUpdate(ctx, id, bson.D{{Key: "pending", Value: from}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "pending", Value: gen}, {Key: "pending_since", Value: at}}}})
	if err != nil || s.Pending != gen || s.Status != sources.StatusFailed {
		return s, err
	}
	return r.findUpdate(ctx, id, bson.D{{Key: "pending", Value: gen}, {Key: "status", Value: sources.StatusFailed}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: sources.StatusProcessing}}}})
}

func (r Sources) PendDue(ctx context.Context, id string, due time.Time, gen string, at time.Time) (sources.Source, error) {
	return r.findUpdate(ctx, id,
		bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "next_sync_at", Value: due}, {Key: "pending", Value: ""}},
			bson.D{{Key: "pending", Value: gen}},
		}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "pending", Value: gen}, {Key: "pending_since", Value: at}, {Key: "next_sync_at", Value: nil}}}})
}

// Load reads the source by _id alone and leaves out a tombstoned one itself: FerretDB reads one
// document only for a filter of exactly {_id}, and decodes the whole collection for any other.
func (r Sources) Load(ctx context.Context, id string) (sources.Source, error) {
	var d struct {
		sources.Source `bson:",inline"`
		DeletedAt      bson.RawValue `bson:"deleted_at"`
	}
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if err == nil && d.DeletedAt.Type != 0 {
		err = mongo.ErrNoDocuments
	}
	return r.withText(ctx, d.Source, wrap(err, sources.Resource))
}

// Chunks are stored in documents of up to chunksPerDoc consecutive chunks of one generation,
// identified by source, generation and number: fewer, larger documents to read back. A
// generation's first document is written first (PutChunks inserts in order) and removed last
// (DropGeneration), so while any document of a generation is stored, its first one is: PutChunks
// looks for leftovers of an earlier attempt by that one _id rather than by source and generation
// (on FerretDB a read of the whole collection).
const chunksPerDoc = 50

// chunkDoc is one stored run of chunks.
type chunkDoc struct {
	ID        string       `bson:"_id"`
	ProjectID string       `bson:"project_id"`
	BotID     string       `bson:"bot_id"`
	SourceID  string       `bson:"source_id"`
	Gen       string       `bson:"gen"`
	Tags      []string     `bson:"tags"`
	Chunks    []chunkEntry `bson:"chunks"`
}

type chunkEntry struct {
	ID        string    `bson:"id"`
	Position  int       `bson:"position"`
	Text      string    `bson:"text"`
	Tokens    int       `bson:"tokens"`
	PageURL   string    `bson:"page_url"`
	PageTitle string    `bson:"page_title"`
	Section   string    `bson:"section,omitempty"`
	Vector    []float32 `bson:"vector,omitempty"`
}

// chunkDocID is the _id of the document holding chunk position of a generation.
func chunkDocID(sourceID, gen string, position int) string {
	return fmt.Sprintf("%s-%s-%d", sourceID, gen, position/chunksPerDoc)
}

func (r Sources) PutChunks(ctx context.Context, sourceID, gen string, chunks []memory.Chunk) error {
	err := r.chunks().FindOne(ctx, bson.D{{Key: "_id", Value: chunkDocID(sourceID, gen, 0)}},
		options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	switch {
	case err == nil:
		if err := r.DropGeneration(ctx, sourceID, gen); err != nil {
			return err
		}
	case !errors.Is(err, mongo.ErrNoDocuments):
		return wrap(err, sources.Resource)
	}
	var docs []any
	for i := 0; i < len(chunks); i += chunksPerDoc {
		run := chunks[i:min(i+chunksPerDoc, len(chunks))]
		d := chunkDoc{ID: chunkDocID(sourceID, gen, run[0].Position), ProjectID: run[0].ProjectID, BotID: run[0].BotID,
			SourceID: sourceID, Gen: gen, Tags: run[0].Tags}
		for _, c := range run {
			d.Chunks = append(d.Chunks, chunkEntry{ID: c.ID, Position: c.Position, Text: c.Text, Tokens: c.Tokens,
				PageURL: c.PageURL, PageTitle: c.PageTitle, Section: c.Section, Vector: c.Vector})
		}
		docs = append(docs, d)
		if len(docs) == 20 || i+chunksPerDoc >= len(chunks) {
			if _, err := r.chunks().InsertMany(ctx, docs); err != nil {
				return wrap(err, sources.Resource)
			}
			docs = docs[:0]
		}
	}
	return nil
}

// DropGeneration removes the generation's first document last (see chunksPerDoc).
func (r Sources) DropGeneration(ctx context.Context, sourceID, gen string) error {
	first := chunkDocID(sourceID, gen, 0)
	_, err := r.chunks().DeleteMany(ctx, bson.D{{Key: "source_id", Value: sourceID}, {Key: "gen", Value: gen},
		{Key: "_id", Value: bson.D{{Key: "$ne", Value: first}}}})
	if err != nil {
		return wrap(err, sources.Resource)
	}
	_, err = r.chunks().DeleteOne(ctx, bson.D{{Key: "_id", Value: first}})
	return wrap(err, sources.Resource)
}

// Complete writes the live list first either way: a failed source leaves it before its record
// says so, and a ready one enters it before, so that a client that reads the source ready finds
// it listed (and the processes' caches of the list told). When the record's write then does not
// land (the source was deleted or moved on to another generation), the entry is derived again
// from the record as it is.
func (r Sources) Complete(ctx context.Context, s sources.Source, gen string, ev outbox.Event) (bool, error) {
	list := r.unsetLive
	if s.Status == sources.StatusSuccess {
		list = r.setLive
	}
	if err := list(ctx, s); err != nil {
		return false, err
	}
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: s.ID}, {Key: "pending", Value: gen}, notDeleted},
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "status", Value: s.Status}, {Key: "failure_reason", Value: s.FailureReason},
			{Key: "pending", Value: ""}, {Key: "pending_since", Value: nil},
			{Key: "gen", Value: s.Gen}, {Key: "chunks", Value: s.Chunks}, {Key: "content_hash", Value: s.ContentHash},
			{Key: "content", Value: s.Content}, {Key: "links", Value: s.Links}, {Key: "tokens", Value: s.Tokens},
			{Key: "synced_at", Value: s.SyncedAt}, {Key: "next_sync_at", Value: s.NextSyncAt},
			{Key: "updated_at", Value: s.UpdatedAt}, {Key: slot(ev.ID), Value: ev},
		}}})
	if err != nil {
		return false, wrap(err, sources.Resource)
	}
	if res.MatchedCount == 0 {
		return false, r.relist(ctx, s.ID)
	}
	return true, nil
}

// relist derives the live entry of source id from its record: listed when it is ready, out
// otherwise. A deleted source needs nothing: its deletion marked it removed for good.
func (r Sources) relist(ctx context.Context, id string) error {
	s, err := r.Load(ctx, id)
	switch {
	case apperr.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case s.Status == sources.StatusSuccess && s.Gen != "":
		return r.setLive(ctx, s)
	}
	return r.unsetLive(ctx, s)
}

func (r Sources) find(ctx context.Context, filter bson.D, limit int) ([]sources.Source, error) {
	cur, err := r.coll().Find(ctx, append(filter, notDeleted), options.Find().SetLimit(int64(limit)))
	if err != nil {
		return nil, wrap(err, sources.Resource)
	}
	var out []sources.Source
	if err := cur.All(ctx, &out); err != nil {
		return nil, wrap(err, sources.Resource)
	}
	return out, r.withTexts(ctx, out)
}

func (r Sources) Due(ctx context.Context, now time.Time, limit int) ([]sources.Source, error) {
	return r.find(ctx, bson.D{{Key: "next_sync_at", Value: bson.D{{Key: "$lte", Value: now}}}, {Key: "pending", Value: ""}}, limit)
}

func (r Sources) Stuck(ctx context.Context, before time.Time, limit int) ([]sources.Source, error) {
	return r.find(ctx, bson.D{{Key: "pending", Value: bson.D{{Key: "$ne", Value: ""}}}, {Key: "pending_since", Value: bson.D{{Key: "$lt", Value: before}}}}, limit)
}

func (r Sources) Expired(ctx context.Context, now time.Time, limit int) ([]sources.Source, error) {
	return r.find(ctx, bson.D{{Key: "forget_after_at", Value: bson.D{{Key: "$lte", Value: now}}}}, limit)
}

func (r Sources) Forget(ctx context.Context, s sources.Source, at time.Time, ev outbox.Event) error {
	return r.Delete(ctx, s, at, ev)
}

func (r Sources) PurgeDeleted(ctx context.Context, limit int) (int, error) {
	cur, err := r.coll().Find(ctx, bson.D{{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: true}}}, {Key: "purged", Value: bson.D{{Key: "$ne", Value: true}}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return 0, wrap(err, sources.Resource)
	}
	var ids []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &ids); err != nil {
		return 0, wrap(err, sources.Resource)
	}
	for _, d := range ids {
		if err := r.purge(ctx, d.ID); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// Memory is what retrieval reads: live source generations and their chunks; and the sets of
// sources versions record.
type Memory struct {
	db    *mongo.Database
	known *knownPages
}

var _ memory.Store = Memory{}

// NewMemory returns the retrieval store of db.
func NewMemory(db *mongo.Database) Memory { return Memory{db: db, known: newKnownPages()} }

// Generations reads the documents of the generations' chunks by their _ids, which their chunk
// counts give.
func (m Memory) Generations(ctx context.Context, gens []memory.Live) (map[string][]memory.Chunk, error) {
	var ids []string
	for _, g := range gens {
		for p := 0; p < g.Chunks; p += chunksPerDoc {
			ids = append(ids, chunkDocID(g.Ref.SourceID, g.Gen, p))
		}
	}
	out := map[string][]memory.Chunk{}
	if len(ids) == 0 {
		return out, nil
	}
	cur, err := m.db.Collection(chunksColl).Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, wrap(err, sources.Resource)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var d chunkDoc
		if err := cur.Decode(&d); err != nil {
			return nil, err
		}
		key := d.SourceID + "/" + d.Gen
		for _, e := range d.Chunks {
			out[key] = append(out[key], memory.Chunk{ID: e.ID, ProjectID: d.ProjectID, BotID: d.BotID, SourceID: d.SourceID, Gen: d.Gen,
				Position: e.Position, Text: e.Text, Tokens: e.Tokens, PageURL: e.PageURL, PageTitle: e.PageTitle, Section: e.Section, Tags: d.Tags, Vector: e.Vector})
		}
	}
	return out, wrap(cur.Err(), sources.Resource)
}
