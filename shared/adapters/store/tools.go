package store

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tools"
)

const (
	toolsColl         = "tools"
	toolCallsColl     = "tool_calls"
	toolRevisionsColl = "tool_revisions"
)

// Tools stores agents' tools and the record of their calls.
type Tools struct{ db *mongo.Database }

var _ tools.Repo = Tools{}

// NewTools returns the tools repository of db.
func NewTools(db *mongo.Database) Tools { return Tools{db: db} }

func (r Tools) coll() *mongo.Collection { return r.db.Collection(toolsColl) }

func byTool(projectID, botID, id string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted}
}

func ofBot(projectID, botID string) bson.D {
	return bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted}
}

func (r Tools) Insert(ctx context.Context, t tools.Tool) error {
	_, err := r.coll().InsertOne(ctx, t)
	return wrap(err, tools.Resource)
}

func (r Tools) Get(ctx context.Context, projectID, botID, id string) (tools.Tool, error) {
	var t tools.Tool
	err := r.coll().FindOne(ctx, byTool(projectID, botID, id)).Decode(&t)
	return t, wrap(err, tools.Resource)
}

func (r Tools) List(ctx context.Context, projectID, botID, typ string, page paging.Page) ([]tools.Tool, int, error) {
	filter := ofBot(projectID, botID)
	if typ != "" {
		filter = append(filter, bson.E{Key: "type", Value: typ})
	}
	list := []tools.Tool{}
	total, err := findPageSorted(ctx, r.coll(), filter, bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}, page, &list)
	return list, total, wrap(err, tools.Resource)
}

func (r Tools) All(ctx context.Context, projectID, botID string) ([]tools.Tool, error) {
	cur, err := r.coll().Find(ctx, ofBot(projectID, botID),
		options.Find().SetSort(bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}).SetLimit(tools.MaxPerAgent))
	if err != nil {
		return nil, wrap(err, tools.Resource)
	}
	var all []tools.Tool
	return all, wrap(cur.All(ctx, &all), tools.Resource)
}

func (r Tools) Count(ctx context.Context, projectID, botID string) (int, error) {
	n, err := r.coll().CountDocuments(ctx, ofBot(projectID, botID))
	return int(n), wrap(err, tools.Resource)
}

func (r Tools) Set(ctx context.Context, projectID, botID, id string, fields map[string]any) (tools.Tool, error) {
	set := bson.D{}
	for k, v := range fields {
		set = append(set, bson.E{Key: k, Value: v})
	}
	var t tools.Tool
	err := r.coll().FindOneAndUpdate(ctx, byTool(projectID, botID, id), bson.D{{Key: "$set", Value: set}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&t)
	return t, wrap(err, tools.Resource)
}

func (r Tools) Delete(ctx context.Context, projectID, botID, id string) error {
	res, err := r.coll().DeleteOne(ctx, byTool(projectID, botID, id))
	if err != nil {
		return wrap(err, tools.Resource)
	}
	if res.DeletedCount == 0 {
		return wrap(mongo.ErrNoDocuments, tools.Resource)
	}
	return nil
}

func (r Tools) Restore(ctx context.Context, t tools.Tool) error {
	_, err := r.coll().ReplaceOne(ctx, bson.D{{Key: "_id", Value: t.ID}, {Key: "project_id", Value: t.ProjectID}, {Key: "bot_id", Value: t.BotID}}, t,
		options.Replace().SetUpsert(true))
	return wrap(err, tools.Resource)
}

// revisionDoc is a tool's form kept under its revision.
type revisionDoc struct {
	ID   string     `bson:"_id"`
	Tool tools.Tool `bson:"tool"`
}

// KeepRevisions inserts each tool's form in one unordered write; a revision kept already (its
// id taken) is left.
func (r Tools) KeepRevisions(ctx context.Context, ts ...tools.Tool) error {
	docs := make([]any, len(ts))
	for i, t := range ts {
		docs[i] = revisionDoc{ID: t.Revision, Tool: t}
	}
	_, err := r.db.Collection(toolRevisionsColl).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	var bulk mongo.BulkWriteException
	if errors.As(err, &bulk) && bulk.WriteConcernError == nil && allDuplicates(bulk.WriteErrors) {
		return nil
	}
	return wrap(err, "tool_revision")
}

func (r Tools) Revision(ctx context.Context, projectID, botID, revision string) (tools.Tool, error) {
	var d revisionDoc
	err := r.db.Collection(toolRevisionsColl).FindOne(ctx, bson.D{{Key: "_id", Value: revision},
		{Key: "tool.project_id", Value: projectID}, {Key: "tool.bot_id", Value: botID}}).Decode(&d)
	return d.Tool, wrap(err, "tool_revision")
}

func (r Tools) Locate(ctx context.Context, id string) (string, string, error) {
	var t struct {
		ProjectID string `bson:"project_id"`
		BotID     string `bson:"bot_id"`
	}
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}, notDeleted},
		options.FindOne().SetProjection(bson.D{{Key: "project_id", Value: 1}, {Key: "bot_id", Value: 1}})).Decode(&t)
	return t.ProjectID, t.BotID, wrap(err, tools.Resource)
}

func (r Tools) Calls(ctx context.Context, projectID, id string, since time.Time, limit int) ([]tools.Call, error) {
	filter := bson.D{{Key: "project_id", Value: projectID}, {Key: "at", Value: bson.D{{Key: "$gte", Value: since}}},
		{Key: "$or", Value: bson.A{bson.D{{Key: "tool_id", Value: id}}, bson.D{{Key: "server_id", Value: id}}}}}
	cur, err := r.db.Collection(toolCallsColl).Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "at", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, wrap(err, "tool_call")
	}
	calls := []tools.Call{}
	return calls, wrap(cur.All(ctx, &calls), "tool_call")
}

func (r Tools) RecordCall(ctx context.Context, c tools.Call) error {
	_, err := r.db.Collection(toolCallsColl).InsertOne(ctx, c)
	return wrap(err, "tool_call")
}
