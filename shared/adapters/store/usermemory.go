package store

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/usermemory"
)

// userMemoriesColl keeps what agents know about their end users, one document per memory.
const userMemoriesColl = "user_memories"

// UserMemories stores end users' memories.
type UserMemories struct{ db *mongo.Database }

var _ usermemory.Repo = UserMemories{}

// NewUserMemories returns the user memories repository of db.
func NewUserMemories(db *mongo.Database) UserMemories { return UserMemories{db: db} }

// newestFirst orders memories as every read returns them (the index's order).
var newestFirst = bson.D{{Key: "updated_at", Value: -1}, {Key: "_id", Value: 1}}

// filterOf is the range of the index that q selects: the agent's, or one user's of it.
func filterOf(q usermemory.Query) bson.D {
	f := bson.D{{Key: "project_id", Value: q.ProjectID}, {Key: "bot_id", Value: q.BotID}}
	if q.UserUUID != "" {
		f = append(f, bson.E{Key: "user", Value: q.UserUUID})
	}
	if q.Type != "" {
		f = append(f, bson.E{Key: "type", Value: q.Type})
	}
	return f
}

func (r UserMemories) ForUser(ctx context.Context, projectID, botID, userUUID string) ([]usermemory.Memory, error) {
	cur, err := r.db.Collection(userMemoriesColl).Find(ctx, filterOf(usermemory.Query{ProjectID: projectID, BotID: botID, UserUUID: userUUID}),
		options.Find().SetSort(newestFirst).SetLimit(usermemory.MaxPerUser))
	if err != nil {
		return nil, wrap(err, usermemory.Resource)
	}
	out := []usermemory.Memory{}
	return out, wrap(cur.All(ctx, &out), usermemory.Resource)
}

func (r UserMemories) List(ctx context.Context, q usermemory.Query, page paging.Page) ([]usermemory.Memory, int, error) {
	out := []usermemory.Memory{}
	total, err := findPageSorted(ctx, r.db.Collection(userMemoriesColl), filterOf(q), newestFirst, page, &out)
	return out, total, wrap(err, usermemory.Resource)
}

func (r UserMemories) Count(ctx context.Context, q usermemory.Query) (int, error) {
	n, err := r.db.Collection(userMemoriesColl).CountDocuments(ctx, filterOf(q))
	return int(n), wrap(err, usermemory.Resource)
}

func (r UserMemories) Put(ctx context.Context, m usermemory.Memory) error {
	_, err := r.db.Collection(userMemoriesColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: m.ID}}, bson.D{
		{Key: "$set", Value: bson.D{{Key: "project_id", Value: m.ProjectID}, {Key: "bot_id", Value: m.BotID}, {Key: "user", Value: m.UserUUID},
			{Key: "type", Value: m.Type}, {Key: "subject", Value: m.Subject}, {Key: "content", Value: m.Content},
			{Key: "message_id", Value: m.MessageID}, {Key: "updated_at", Value: m.UpdatedAt}}},
		{Key: "$setOnInsert", Value: bson.D{{Key: "created_at", Value: m.CreatedAt}}},
	}, options.UpdateOne().SetUpsert(true))
	return wrap(err, usermemory.Resource)
}

func (r UserMemories) Delete(ctx context.Context, projectID, botID, id string) (usermemory.Memory, error) {
	var m usermemory.Memory
	err := r.db.Collection(userMemoriesColl).FindOneAndDelete(ctx,
		bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}}).Decode(&m)
	return m, wrap(err, usermemory.Resource)
}
