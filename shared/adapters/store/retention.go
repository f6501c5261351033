package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/retention"
)

// Retention deletes records past their retention, a batch at a time, each kind by an index of
// its time field.
type Retention struct{ db *mongo.Database }

var _ retention.Repo = Retention{}

// NewRetention returns the retention repository of db.
func NewRetention(db *mongo.Database) Retention { return Retention{db: db} }

func (r Retention) DeleteFirings(ctx context.Context, before time.Time, limit int) (int, error) {
	return deleteOldest(ctx, r.db.Collection(firingsColl), nil, "scheduled_at", before, limit)
}

func (r Retention) DeleteToolCalls(ctx context.Context, before time.Time, limit int) (int, error) {
	return deleteOldest(ctx, r.db.Collection(toolCallsColl), nil, "at", before, limit)
}

// DeleteIdleSubscribers deletes each one only if it is still anonymous, chatless and unseen
// since: a visitor who came back between the read and the delete stays.
func (r Retention) DeleteIdleSubscribers(ctx context.Context, before time.Time, limit int) (int, error) {
	return deleteOldest(ctx, r.db.Collection(subscribersColl), bson.D{{Key: "anonymous", Value: true}, {Key: "chats", Value: 0}},
		"last_seen", before, limit)
}

func (r Retention) DeleteChannelMessages(ctx context.Context, before time.Time, limit int) (int, error) {
	return deleteOldest(ctx, r.db.Collection(channelMessagesColl), nil, "received_at", before, limit)
}

func (r Retention) DeleteEmails(ctx context.Context, before time.Time, limit int) (int, error) {
	return deleteOldest(ctx, r.db.Collection(emailsColl), nil, "created_at", before, limit)
}

func (r Retention) DeleteChannelSends(ctx context.Context, before time.Time, limit int) (int, error) {
	return deleteOldest(ctx, r.db.Collection(channelSendsColl), nil, "created_at", before, limit)
}

// deleteOldest deletes at most limit documents matching filter whose field is before before,
// oldest first: it reads their _ids by the index of filter's fields and field, then deletes
// them in one command of a statement each (by _id alone when filter is nil: the embedded store
// reads such a filter by its index).
func deleteOldest(ctx context.Context, coll *mongo.Collection, filter bson.D, field string, before time.Time, limit int) (int, error) {
	match := append(bson.D{}, filter...)
	match = append(match, bson.E{Key: field, Value: bson.D{{Key: "$lt", Value: before}}})
	cur, err := coll.Find(ctx, match, options.Find().SetSort(bson.D{{Key: field, Value: 1}}).SetLimit(int64(limit)).
		SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return 0, wrap(err, coll.Name())
	}
	var docs []struct {
		ID any `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil || len(docs) == 0 {
		return 0, wrap(err, coll.Name())
	}
	deletes := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		one := bson.D{{Key: "_id", Value: d.ID}}
		if filter != nil {
			one = append(one, match...)
		}
		deletes[i] = mongo.NewDeleteOneModel().SetFilter(one)
	}
	res, err := coll.BulkWrite(ctx, deletes, options.BulkWrite().SetOrdered(false))
	if err != nil {
		return 0, wrap(err, coll.Name())
	}
	return int(res.DeletedCount), nil
}
