package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/sources"
)

// memoryLiveColl holds, per agent, one document listing its retrievable source generations:
// retrieval reads it by _id instead of querying the sources. It is derived from the sources,
// written with single-document updates: a source leaves it before the write that deletes,
// forgets or fails the source, and enters it just before the write that makes it ready (so that
// whoever reads the source ready finds it listed; when that write does not land, the entry is
// derived again from the record). A source deleted or forgotten is marked removed there for
// good, so a late write cannot bring it back. The planner repairs what a crash between the two
// writes left behind (RepairLive): a source out of the list that should be in, or, after a
// crash just before a source's record said ready, one listed with its complete generation a
// moment early.
//
// Every write to an agent's list sets a new version token in it (`v`, by the same update), and
// then the same token in a small document beside it (liveVersionID): a reader keeps the list it
// decoded while the token stays the same, and reads one small document per query instead of the
// whole list.
const memoryLiveColl = "memory_live"

// liveVersionID is the _id of the document holding the version token of botID's live list.
func liveVersionID(botID string) string { return "version/" + botID }

// liveEntry is a source as retrieval reads it. Its empty fields are left out (but gen, which
// marks a listed source): the list holds every source of the agent, removed ones included, and
// every write of it rewrites it whole on the embedded store, where the fields of an entry of a
// text source fell from 9 to 5.
type liveEntry struct {
	UUID          string     `bson:"uuid,omitempty"`
	Title         string     `bson:"title,omitempty"`
	URL           string     `bson:"url,omitempty"`
	Favicon       string     `bson:"favicon,omitempty"`
	Type          string     `bson:"type,omitempty"`
	Tags          []string   `bson:"tags,omitempty"`
	Gen           string     `bson:"gen"`
	Chunks        int        `bson:"chunks,omitempty"`
	ForgetAfterAt *time.Time `bson:"forget_after_at,omitempty"`
	Removed       bool       `bson:"removed,omitempty"`
}

type liveDoc struct {
	ID        string               `bson:"_id"`
	ProjectID string               `bson:"project_id"`
	Entries   map[string]liveEntry `bson:"entries"`
	// V is the version token the list's last write set ("" for a list last written before
	// lists carried one).
	V string `bson:"v"`
}

func (r Sources) live() *mongo.Collection { return r.db.Collection(memoryLiveColl) }

func entryPath(sourceID string) string { return "entries." + sourceID }

// setLive lists a ready source, unless it was removed for good. It updates the agent's list, and
// creates it when there is none, rather than upserting: an upsert conditional on more than _id
// reads the whole collection on FerretDB (the proxy narrows only plain updates to their _id).
func (r Sources) setLive(ctx context.Context, s sources.Source) error {
	ref := s.Ref()
	e := liveEntry{UUID: s.UUID, Title: ref.Title, URL: ref.URL, Favicon: ref.Favicon, Type: ref.Type, Tags: ref.Tags,
		Gen: s.Gen, Chunks: s.Chunks, ForgetAfterAt: s.ForgetAfterAt}
	v := newLiveVersion()
	set := bson.D{{Key: "project_id", Value: s.ProjectID}, {Key: entryPath(s.ID), Value: e}, {Key: "v", Value: v}}
	update := func() (*mongo.UpdateResult, error) {
		return r.live().UpdateOne(ctx, bson.D{{Key: "_id", Value: s.BotID}, {Key: entryPath(s.ID) + ".removed", Value: bson.D{{Key: "$ne", Value: true}}}},
			bson.D{{Key: "$set", Value: set}})
	}
	res, err := update()
	if err != nil || res.MatchedCount > 0 {
		return r.touchLive(ctx, s.BotID, v, res, err)
	}
	_, err = r.live().InsertOne(ctx, liveDoc{ID: s.BotID, ProjectID: s.ProjectID, Entries: map[string]liveEntry{s.ID: e}, V: v})
	if err == nil {
		return r.touchLive(ctx, s.BotID, v, &mongo.UpdateResult{UpsertedCount: 1}, nil)
	}
	if !mongo.IsDuplicateKeyError(err) {
		return wrap(err, sources.Resource)
	}
	// The list exists: it marks this source removed (it stays out), or another write made it
	// since the update.
	res, err = update()
	return r.touchLive(ctx, s.BotID, v, res, err)
}

// refreshLive rewrites what users edit of a listed source (its reference, tags and forget
// time), leaving its generation to the ingestion that owns it.
func (r Sources) refreshLive(ctx context.Context, s sources.Source) error {
	ref, path, v := s.Ref(), entryPath(s.ID), newLiveVersion()
	res, err := r.live().UpdateOne(ctx, bson.D{{Key: "_id", Value: s.BotID}, {Key: path + ".gen", Value: bson.D{{Key: "$exists", Value: true}}},
		{Key: path + ".removed", Value: bson.D{{Key: "$ne", Value: true}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: path + ".title", Value: ref.Title}, {Key: path + ".url", Value: ref.URL},
			{Key: path + ".favicon", Value: ref.Favicon}, {Key: path + ".tags", Value: ref.Tags}, {Key: path + ".forget_after_at", Value: s.ForgetAfterAt},
			{Key: "v", Value: v}}}})
	return r.touchLive(ctx, s.BotID, v, res, err)
}

// unsetLive takes a source out (it may come back: a failed source can be synced again).
func (r Sources) unsetLive(ctx context.Context, s sources.Source) error {
	v := newLiveVersion()
	res, err := r.live().UpdateOne(ctx, bson.D{{Key: "_id", Value: s.BotID}, {Key: entryPath(s.ID) + ".removed", Value: bson.D{{Key: "$ne", Value: true}}}},
		bson.D{{Key: "$unset", Value: bson.D{{Key: entryPath(s.ID), Value: ""}}}, {Key: "$set", Value: bson.D{{Key: "v", Value: v}}}})
	return r.touchLive(ctx, s.BotID, v, res, err)
}

// removeLive takes a deleted or forgotten source out for good.
func (r Sources) removeLive(ctx context.Context, s sources.Source) error {
	v := newLiveVersion()
	res, err := r.live().UpdateOne(ctx, bson.D{{Key: "_id", Value: s.BotID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "project_id", Value: s.ProjectID}, {Key: entryPath(s.ID), Value: liveEntry{Removed: true}}, {Key: "v", Value: v}}}},
		options.UpdateOne().SetUpsert(true))
	return r.touchLive(ctx, s.BotID, v, res, err)
}

// newLiveVersion is a new version token of a live list: a fresh ObjectID, so a token deleted and
// made again never comes back.
func newLiveVersion() string { return bson.NewObjectID().Hex() }

// touchLive follows a write to botID's live list that set version v and ended with res and err:
// when it matched the list, the document beside it takes v too.
func (r Sources) touchLive(ctx context.Context, botID, v string, res *mongo.UpdateResult, err error) error {
	if err != nil {
		return wrap(err, sources.Resource)
	}
	if res.MatchedCount == 0 && res.UpsertedCount == 0 {
		return nil
	}
	_, err = r.live().UpdateOne(ctx, bson.D{{Key: "_id", Value: liveVersionID(botID)}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: v}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil {
		return wrap(err, sources.Resource)
	}
	if r.liveChanged != nil {
		r.liveChanged(botID)
	}
	return nil
}

// RepairLive re-derives the live entries of the sources changed since: a crash between a
// source's write and its live entry's leaves the entry missing or stale, never wrong in the
// direction of showing what must not be shown.
func (r Sources) RepairLive(ctx context.Context, since time.Time) error {
	cur, err := r.coll().Find(ctx, bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "updated_at", Value: bson.D{{Key: "$gte", Value: since}}}},
		bson.D{{Key: "deleted_at", Value: bson.D{{Key: "$gte", Value: since}}}},
	}}})
	if err != nil {
		return wrap(err, sources.Resource)
	}
	var changed []struct {
		sources.Source `bson:",inline"`
		DeletedAt      *time.Time `bson:"deleted_at"`
	}
	if err := cur.All(ctx, &changed); err != nil {
		return wrap(err, sources.Resource)
	}
	for _, s := range changed {
		switch {
		case s.DeletedAt != nil:
			err = r.removeLive(ctx, s.Source)
		case s.Status == sources.StatusSuccess && s.Gen != "":
			err = r.setLive(ctx, s.Source)
		default:
			err = r.unsetLive(ctx, s.Source)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// LiveVersion reads the version token of botID's live list ("" when it has none).
func (m Memory) LiveVersion(ctx context.Context, botID string) (string, error) {
	var d struct {
		V string `bson:"v"`
	}
	err := m.db.Collection(memoryLiveColl).FindOne(ctx, bson.D{{Key: "_id", Value: liveVersionID(botID)}}).Decode(&d)
	if err == mongo.ErrNoDocuments {
		return "", nil
	}
	return d.V, wrap(err, sources.Resource)
}

// Live reads the agent's live list: every source listed and not removed, by source id, and the
// version token its last write set.
func (m Memory) Live(ctx context.Context, projectID, botID string) ([]memory.Listed, string, error) {
	var d liveDoc
	err := m.db.Collection(memoryLiveColl).FindOne(ctx, bson.D{{Key: "_id", Value: botID}}).Decode(&d)
	if err == mongo.ErrNoDocuments || err == nil && d.ProjectID != projectID {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", wrap(err, sources.Resource)
	}
	var out []memory.Listed
	for id, e := range d.Entries {
		if e.Removed {
			continue
		}
		tags := e.Tags
		if tags == nil {
			tags = []string{}
		}
		out = append(out, memory.Listed{UUID: e.UUID, ForgetAt: e.ForgetAfterAt, Live: memory.Live{Gen: e.Gen, Chunks: e.Chunks,
			Ref: memory.Ref{SourceID: id, Title: e.Title, URL: e.URL, Favicon: e.Favicon, Type: e.Type, Tags: tags}}})
	}
	slices.SortFunc(out, func(a, b memory.Listed) int { return strings.Compare(a.Ref.SourceID, b.Ref.SourceID) })
	return out, d.V, nil
}
