package store

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/batch"
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
type Executions struct {
	db    *mongo.Database
	moves *batch.Batcher[bson.Raw]
}

var _ agentruns.Repo = Executions{}

// NewExecutions returns the execution repository of db; log is told of moves to the finished
// ones that failed (the scheduler's sweep makes them later).
func NewExecutions(db *mongo.Database, log *slog.Logger) Executions {
	return Executions{db: db, moves: moves(db, log)}
}

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

// MoveEnded moves up to limit executions that ended but are still among the live ones (a worker
// stopped before it moved them) to the finished ones, in one batch.
func (r Executions) MoveEnded(ctx context.Context, limit int) (int, error) {
	cur, err := r.coll().Find(ctx, bson.D{{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{agentruns.StatusDone, agentruns.StatusFailed, agentruns.StatusCanceled}}}}},
		options.Find().SetLimit(int64(limit)))
	if err != nil {
		return 0, wrap(err, agentruns.Resource)
	}
	var ended []bson.Raw
	if err := cur.All(ctx, &ended); err != nil {
		return 0, wrap(err, agentruns.Resource)
	}
	return len(ended), move(ctx, r.db, ended)
}

// move copies ended, executions as they ended, to the finished ones (once: a copy there already
// is left as it is), then removes them from the live ones: two store commands for any number.
// Reads find each in one place or the other meanwhile.
func move(ctx context.Context, db *mongo.Database, ended []bson.Raw) error {
	if len(ended) == 0 {
		return nil
	}
	_, err := db.Collection(finishedColl).InsertMany(ctx, ended, options.InsertMany().SetOrdered(false))
	if err != nil && !duplicates(err) {
		return wrap(err, agentruns.Resource)
	}
	// One delete command of a statement by _id for each (an ended execution changes no more):
	// the embedded store reads a filter of _id alone by its index, and any other by reading
	// the whole collection.
	deletes := make([]mongo.WriteModel, len(ended))
	for i, e := range ended {
		deletes[i] = mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: e.Lookup("_id")}})
	}
	_, err = db.Collection(executionsColl).BulkWrite(ctx, deletes, options.BulkWrite().SetOrdered(false))
	return wrap(err, agentruns.Resource)
}

// duplicates reports whether err is an insert's refusal of documents that were all there already.
func duplicates(err error) bool {
	var bulk mongo.BulkWriteException
	if !errors.As(err, &bulk) || bulk.WriteConcernError != nil || len(bulk.WriteErrors) == 0 {
		return false
	}
	for _, e := range bulk.WriteErrors {
		if e.Code != 11000 {
			return false
		}
	}
	return true
}

// moveTimeout bounds a batch of moves to the finished ones.
const moveTimeout = 10 * time.Second

// moveGrace is how long a batch of moves waits before it moves: the followers of a run read it
// when its end's notice comes, by _id among the live ones, and one that has been moved already
// costs them a second read, among the finished ones.
const moveGrace = 250 * time.Millisecond

// moves moves the executions that ended in this process (as they ended) to the finished ones
// off their runs' path, in batches of whatever ended meanwhile, each after moveGrace. A process
// that stops with moves left leaves them to the scheduler's sweep (MoveEnded); reads find the
// executions among the live ones until then.
func moves(db *mongo.Database, log *slog.Logger) *batch.Batcher[bson.Raw] {
	return batch.New(func(ended []bson.Raw) {
		time.Sleep(moveGrace)
		ctx, cancel := context.WithTimeout(context.Background(), moveTimeout)
		defer cancel()
		if err := move(ctx, db, ended); err != nil {
			log.Warn("ended agent runs not moved to the finished ones yet; the scheduler's sweep will", "runs", len(ended), "error", err)
		}
	})
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

// notCanceled is the condition of a worker's writes that do not end its run, its lease's renewals
// among them: no cancel of the run was asked for. The refusal tells the worker of a cancel
// without a read at each cycle.
var notCanceled = bson.E{Key: "cancel_requested", Value: bson.D{{Key: "$ne", Value: true}}}

func (r Executions) Renew(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	return renew(ctx, r.coll(), id, owner, until, agentruns.Resource, notCanceled)
}

// renew extends owner's lease (owner, lease_until) of the document id to until, while the
// document matches conditions too; false when owner no longer holds it (or it does not match).
func renew(ctx context.Context, coll *mongo.Collection, id, owner string, until time.Time, resource string, conditions ...bson.E) (bool, error) {
	res, err := coll.UpdateOne(ctx, append(bson.D{{Key: "_id", Value: id}, {Key: "owner", Value: owner}}, conditions...),
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
		// The change and the read of what it made are one command; the move to the finished
		// ones follows off the run's path. A crash before it leaves an ended execution among
		// the live ones, which the scheduler's sweep moves (MoveEnded).
		var e bson.Raw
		err := r.coll().FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&e)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		if err != nil {
			return false, wrap(err, agentruns.Resource)
		}
		r.moves.Add(e)
		return true, nil
	}
	res, err := r.coll().UpdateOne(ctx, append(filter, notCanceled), update)
	if err != nil {
		return false, wrap(err, agentruns.Resource)
	}
	return res.MatchedCount == 1, nil
}

// cancelTries bounds the writes of a cancel racing the run's own changes.
const cancelTries = 5

func (r Executions) Cancel(ctx context.Context, e agentruns.Execution, entry agentruns.Entry, now time.Time) (agentruns.Execution, bool, error) {
	for range cancelTries {
		switch e.Status {
		case agentruns.StatusQueued, agentruns.StatusApproval:
			out, ok, err := r.end(ctx, e, entry, now)
			if ok || err != nil {
				return out, ok, err
			}
		case agentruns.StatusRunning:
			res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: e.ID}, {Key: "status", Value: agentruns.StatusRunning}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "cancel_requested", Value: true}}}})
			if err != nil {
				return e, false, wrap(err, agentruns.Resource)
			}
			if res.MatchedCount == 1 {
				e.CancelRequested = true
				return e, true, nil
			}
		default:
			return e, false, nil
		}
		var err error
		if e, err = r.Get(ctx, e.ProjectID, e.BotID, e.ID); err != nil {
			return e, false, err
		}
	}
	return e, false, apperr.New(apperr.Conflict, "run_busy", "The run changed at every attempt to cancel it: try again.")
}

// end ends e, queued or waiting for an approval as read (no worker holds it), canceled, its log
// adding entry; false when it changed since it was read.
func (r Executions) end(ctx context.Context, e agentruns.Execution, entry agentruns.Entry, now time.Time) (agentruns.Execution, bool, error) {
	entry.Seq = len(e.Log) + 1
	filter := bson.D{{Key: "_id", Value: e.ID}, {Key: "status", Value: e.Status}, {Key: "owner", Value: ""}, {Key: "logged", Value: len(e.Log)}}
	update := bson.D{
		{Key: "$set", Value: bson.D{{Key: "status", Value: agentruns.StatusCanceled}, {Key: "cancel_requested", Value: true},
			{Key: "logged", Value: entry.Seq}, {Key: "updated_at", Value: now}}},
		{Key: "$push", Value: bson.D{{Key: "log", Value: entry}}},
		{Key: "$unset", Value: bson.D{{Key: "pending", Value: ""}}},
	}
	res := r.coll().FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After))
	var ended bson.Raw
	err := res.Decode(&ended)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return e, false, nil
	}
	var out execution
	if err == nil {
		// The document read once, decoded twice (the client's registry decodes the execution).
		err = res.Decode(&out)
	}
	if err != nil {
		return e, false, wrap(err, agentruns.Resource)
	}
	r.moves.Add(ended)
	return out.Execution, true, nil
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
