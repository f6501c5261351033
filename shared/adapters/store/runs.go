package store

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/agentruns"
)

const (
	executionsColl = "executions"
	// finishedColl keeps executions that ended: the live collection holds only runs under way,
	// so that its conditional writes, which the embedded store answers by reading the whole
	// collection (it uses an index only for a filter of _id alone), stay cheap.
	finishedColl = "executions_finished"
)

// Executions stores agent runs, one document per execution: in the live collection while they
// run or wait, then in the finished one. Its log is numbered by the field logged, so that a
// worker's write applies only on top of what it read.
type Executions struct{ db *mongo.Database }

var _ agentruns.Repo = Executions{}

// NewExecutions returns the execution repository of db.
func NewExecutions(db *mongo.Database) Executions { return Executions{db: db} }

func (r Executions) coll() *mongo.Collection { return r.db.Collection(executionsColl) }

// execution is the stored form: the execution and how many log entries it has.
type execution struct {
	agentruns.Execution `bson:",inline"`
	Logged              int `bson:"logged"`
}

func (r Executions) Insert(ctx context.Context, e agentruns.Execution) error {
	_, err := r.coll().InsertOne(ctx, execution{Execution: e, Logged: len(e.Log)})
	return wrap(err, agentruns.Resource)
}

// Get reads the execution by _id alone (live, else finished) and checks its owner after.
func (r Executions) Get(ctx context.Context, projectID, botID, id string) (agentruns.Execution, error) {
	var e execution
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&e)
	if errors.Is(err, mongo.ErrNoDocuments) {
		err = r.db.Collection(finishedColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&e)
	}
	if err == nil && (e.ProjectID != projectID || e.BotID != botID) {
		err = mongo.ErrNoDocuments
	}
	return e.Execution, wrap(err, agentruns.Resource)
}

// Finish moves an ended execution to the finished collection: copied (once), then removed from
// the live one. Reads find it in either place meanwhile.
func (r Executions) Finish(ctx context.Context, id string) error {
	var e bson.Raw
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&e)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		return wrap(err, agentruns.Resource)
	}
	return r.finish(ctx, id, e)
}

// finish moves e, the live execution id as read, to the finished ones if it ended.
func (r Executions) finish(ctx context.Context, id string, e bson.Raw) error {
	if status, _ := e.Lookup("status").StringValueOK(); status != agentruns.StatusDone && status != agentruns.StatusFailed {
		return nil
	}
	if _, err := r.db.Collection(finishedColl).InsertOne(ctx, e); err != nil && !mongo.IsDuplicateKeyError(err) {
		return wrap(err, agentruns.Resource)
	}
	_, err := r.coll().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	return wrap(err, agentruns.Resource)
}

// Ended lists executions that ended but are still in the live collection (a worker stopped
// between the two writes of Finish).
func (r Executions) Ended(ctx context.Context, limit int) ([]string, error) {
	return r.ids(ctx, bson.D{{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{agentruns.StatusDone, agentruns.StatusFailed}}}}}, limit)
}

func (r Executions) Claim(ctx context.Context, id, owner string, until, now time.Time) (agentruns.Execution, bool, error) {
	filter := bson.D{{Key: "_id", Value: id},
		{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{agentruns.StatusQueued, agentruns.StatusRunning}}}},
		{Key: "$or", Value: bson.A{bson.D{{Key: "owner", Value: ""}}, bson.D{{Key: "lease_until", Value: bson.D{{Key: "$lt", Value: now}}}}}}}
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: agentruns.StatusRunning}, {Key: "owner", Value: owner}, {Key: "lease_until", Value: until}}}}
	var e execution
	err := r.coll().FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&e)
	if errors.Is(err, mongo.ErrNoDocuments) {
		// Not claimable: held, waiting, ended, or ended and moved to the finished ones (a task
		// of a run that is over, delivered again, finds it there and does nothing).
		err = r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&e)
		if errors.Is(err, mongo.ErrNoDocuments) {
			err = r.db.Collection(finishedColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&e)
		}
		return e.Execution, false, wrap(err, agentruns.Resource)
	}
	return e.Execution, err == nil, wrap(err, agentruns.Resource)
}

func (r Executions) Renew(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	return renew(ctx, r.coll(), id, owner, until, agentruns.Resource)
}

// renew extends owner's lease (owner, lease_until) of the document id to until; false when owner
// no longer holds it.
func renew(ctx context.Context, coll *mongo.Collection, id, owner string, until time.Time, resource string) (bool, error) {
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "owner", Value: owner}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "lease_until", Value: until}}}})
	if err != nil {
		return false, wrap(err, resource)
	}
	return res.MatchedCount == 1, nil
}

func (r Executions) Advance(ctx context.Context, id, owner string, logged int, c agentruns.Change) (bool, error) {
	set := bson.D{{Key: "logged", Value: logged + len(c.Log)}}
	for k, v := range c.Set {
		set = append(set, bson.E{Key: k, Value: v})
	}
	update := bson.D{{Key: "$set", Value: set}}
	push := bson.D{}
	if c.Cycle != nil {
		push = append(push, bson.E{Key: "cycles", Value: c.Cycle})
	}
	if len(c.Log) > 0 {
		push = append(push, bson.E{Key: "log", Value: bson.D{{Key: "$each", Value: c.Log}}})
	}
	if len(push) > 0 {
		update = append(update, bson.E{Key: "$push", Value: push})
	}
	if len(c.Unset) > 0 {
		unset := bson.D{}
		for _, k := range c.Unset {
			unset = append(unset, bson.E{Key: k, Value: ""})
		}
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	filter := bson.D{{Key: "_id", Value: id}, {Key: "owner", Value: owner}, {Key: "logged", Value: logged}}
	if c.End {
		// The change and the read of what it made are one command; a crash before the move
		// leaves an ended execution among the live ones, which Ended lists.
		var e bson.Raw
		err := r.coll().FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&e)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		if err != nil {
			return false, wrap(err, agentruns.Resource)
		}
		return true, r.finish(ctx, id, e)
	}
	res, err := r.coll().UpdateOne(ctx, filter, update)
	if err != nil {
		return false, wrap(err, agentruns.Resource)
	}
	return res.MatchedCount == 1, nil
}

func (r Executions) Decide(ctx context.Context, projectID, botID, id string, cycle int, approved bool, arguments string, now time.Time) (bool, error) {
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "status", Value: agentruns.StatusApproval}, {Key: "pending.cycle", Value: cycle}, {Key: "pending.decided", Value: false}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: agentruns.StatusQueued}, {Key: "owner", Value: ""},
			{Key: "pending.decided", Value: true}, {Key: "pending.approved", Value: approved}, {Key: "pending.arguments", Value: arguments},
			{Key: "updated_at", Value: now}}}})
	if err != nil {
		return false, wrap(err, agentruns.Resource)
	}
	return res.MatchedCount == 1, nil
}

func (r Executions) Release(ctx context.Context, id, owner string, now time.Time) error {
	_, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "owner", Value: owner}, {Key: "status", Value: agentruns.StatusRunning}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: agentruns.StatusQueued}, {Key: "owner", Value: ""}, {Key: "updated_at", Value: now}}}})
	return wrap(err, agentruns.Resource)
}

func (r Executions) Stale(ctx context.Context, queuedBefore, leaseBefore time.Time, limit int) ([]string, error) {
	filter := bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "status", Value: agentruns.StatusQueued}, {Key: "updated_at", Value: bson.D{{Key: "$lt", Value: queuedBefore}}}},
		bson.D{{Key: "status", Value: agentruns.StatusRunning}, {Key: "lease_until", Value: bson.D{{Key: "$lt", Value: leaseBefore}}}},
	}}}
	return r.ids(ctx, filter, limit)
}

// ids lists the ids of up to limit live executions that filter matches.
func (r Executions) ids(ctx context.Context, filter bson.D, limit int) ([]string, error) {
	cur, err := r.coll().Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, wrap(err, agentruns.Resource)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap(err, agentruns.Resource)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}

func (r Executions) Waiting(ctx context.Context, projectID, botID, chatID string) (agentruns.Execution, error) {
	var e execution
	err := r.coll().FindOne(ctx, bson.D{{Key: "chat_id", Value: chatID}, {Key: "status", Value: agentruns.StatusApproval}},
		options.FindOne().SetSort(bson.D{{Key: "created_at", Value: -1}})).Decode(&e)
	if err == nil && (e.ProjectID != projectID || e.BotID != botID) {
		err = mongo.ErrNoDocuments
	}
	return e.Execution, wrap(err, agentruns.Resource)
}
