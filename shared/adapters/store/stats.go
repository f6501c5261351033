package store

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/inbox"
	"github.com/agentplane/agentplane/shared/stats"
	"github.com/agentplane/agentplane/shared/tools"
	"github.com/agentplane/agentplane/shared/workflows"
)

// Stats keeps an agent's statistics: the hours folded from chat events (and the
// recorder's place in the stream), and reads them with the agent's tool calls, agent runs and
// workflow runs.
type Stats struct{ db *mongo.Database }

var (
	_ stats.Repo   = Stats{}
	_ stats.Ledger = Stats{}
)

// NewStats returns the statistics of db.
func NewStats(db *mongo.Database) Stats { return Stats{db: db} }

const (
	statHoursColl    = "stat_hours"
	statRecorderColl = "stat_recorder"
	// recorderID is the one document of the recorder's claim and place.
	recorderID = "recorder"
)

// Hours reads the agent's hours starting in [from, to) (by the bot index of stat_hours).
func (r Stats) Hours(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.Hourly) error) error {
	return eachOf(ctx, r.db.Collection(statHoursColl), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "start", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}}, each)
}

// eachOf calls each with every document of coll matching filter, decoded as T.
func eachOf[T any](ctx context.Context, coll *mongo.Collection, filter bson.D, each func(T) error, opts ...options.Lister[options.FindOptions]) error {
	cur, err := coll.Find(ctx, filter, opts...)
	if err != nil {
		return wrap(err, stats.Resource)
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		var v T
		if err := cur.Decode(&v); err != nil {
			return wrap(err, stats.Resource)
		}
		if err := each(v); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), stats.Resource)
}

// HoursByID reads the stored hours among ids in one find by _id (maxFind at a time): the
// embedded store reads such a find by _id, not by a collection scan.
func (r Stats) HoursByID(ctx context.Context, ids []string) (map[string]stats.Hourly, error) {
	out := map[string]stats.Hourly{}
	for part := range slices.Chunk(ids, maxFind) {
		err := eachOf(ctx, r.db.Collection(statHoursColl), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: part}}}}, func(h stats.Hourly) error {
			out[h.ID] = h
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PutHour writes h over the stored hour of sequence prev, or inserts it when prev is 0.
func (r Stats) PutHour(ctx context.Context, h stats.Hourly, prev uint64) (bool, error) {
	coll := r.db.Collection(statHoursColl)
	if prev == 0 {
		_, err := coll.InsertOne(ctx, h)
		if mongo.IsDuplicateKeyError(err) {
			return false, nil
		}
		return err == nil, wrap(err, stats.Resource)
	}
	res, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: h.ID}, {Key: "seq", Value: int64(prev)}}, h)
	if err != nil {
		return false, wrap(err, stats.Resource)
	}
	return res.MatchedCount == 1, nil
}

// Release gives owner's claim up.
func (r Stats) Release(ctx context.Context, owner string) error {
	_, err := r.db.Collection(statRecorderColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: recorderID}, {Key: "owner", Value: owner}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "until", Value: time.Time{}}}}})
	return wrap(err, stats.Resource)
}

// recorderDoc is the recorder's claim and place.
type recorderDoc struct {
	Owner string    `bson:"owner"`
	Until time.Time `bson:"until"`
	Seq   int64     `bson:"seq"`
}

// Claim takes the recorder's claim for owner unless another holds it until later than now.
func (r Stats) Claim(ctx context.Context, owner string, until time.Time) (uint64, bool, error) {
	filter := bson.D{{Key: "_id", Value: recorderID}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "owner", Value: owner}}, bson.D{{Key: "until", Value: bson.D{{Key: "$lt", Value: time.Now()}}}}}}}
	var d recorderDoc
	err := r.db.Collection(statRecorderColl).FindOneAndUpdate(ctx, filter,
		bson.D{{Key: "$set", Value: bson.D{{Key: "owner", Value: owner}, {Key: "until", Value: until}}}},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&d)
	if mongo.IsDuplicateKeyError(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap(err, stats.Resource)
	}
	return uint64(d.Seq), true, nil
}

// Advance moves owner's place to seq (never back) and renews its claim.
func (r Stats) Advance(ctx context.Context, owner string, seq uint64, until time.Time) (bool, error) {
	res, err := r.db.Collection(statRecorderColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: recorderID}, {Key: "owner", Value: owner}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "until", Value: until}}}, {Key: "$max", Value: bson.D{{Key: "seq", Value: int64(seq)}}}})
	if err != nil {
		return false, wrap(err, stats.Resource)
	}
	return res.MatchedCount == 1, nil
}

// ToolCalls reads the agent's recorded tool calls of the window (by the bot index of
// tool_calls).
func (r Stats) ToolCalls(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.ToolCall) error) error {
	return eachOf(ctx, r.db.Collection(toolCallsColl), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "at", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}}, func(c tools.Call) error {
		return each(stats.ToolCall{ToolID: c.ToolID, Operation: c.Operation, Outcome: c.Outcome, DurationMS: c.DurationMS, At: c.At})
	})
}

// AgentRuns reads the agent's runs of the window, under way (executions) and ended
// (executions_finished, by its bot index), with their cycles' numbers and log entries' events
// (an ended run may still be in the live collection for a moment: each run is served once).
func (r Stats) AgentRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.AgentRun) error) error {
	filter := bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "created_at", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}}
	proj := bson.D{{Key: "status", Value: 1}, {Key: "created_at", Value: 1}, {Key: "cycles.cycle", Value: 1}, {Key: "log.event", Value: 1}, {Key: "log.data", Value: 1}}
	seen := map[string]bool{}
	for _, coll := range []string{finishedColl, executionsColl} {
		cur, err := r.db.Collection(coll).Find(ctx, filter, options.Find().SetProjection(proj))
		if err != nil {
			return wrap(err, stats.Resource)
		}
		err = eachRun(ctx, cur, seen, each)
		_ = cur.Close(ctx)
		if err != nil {
			return err
		}
	}
	return nil
}

func eachRun(ctx context.Context, cur *mongo.Cursor, seen map[string]bool, each func(stats.AgentRun) error) error {
	for cur.Next(ctx) {
		var e agentruns.Execution
		if err := cur.Decode(&e); err != nil {
			return wrap(err, stats.Resource)
		}
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		run := stats.AgentRun{Status: e.Status, Cycles: len(e.Cycles), CreatedAt: e.CreatedAt}
		if n := len(e.Log); n > 0 && e.Log[n-1].Event == agentruns.EventError {
			run.ErrorCode = agentruns.FailureOf(e.Log[n-1]).Code
		}
		if err := each(run); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), stats.Resource)
}

// WorkflowRuns reads the runs of the agent's workflows of the window (by the bot index of
// workflow_runs), not the skipped logs, which ran nothing.
func (r Stats) Handoffs(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.Handoff) error) error {
	return eachOf(ctx, r.db.Collection(handoffsColl), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "requested_at", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}}}, func(h inbox.Handoff) error {
		return each(stats.Handoff{Source: h.Source, RequestedAt: h.RequestedAt, FirstReplyAt: h.FirstReplyAt})
	}, options.Find().SetProjection(bson.D{{Key: "source", Value: 1}, {Key: "requested_at", Value: 1}, {Key: "first_reply_at", Value: 1}}))
}

func (r Stats) WorkflowRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(stats.WorkflowRun) error) error {
	return eachOf(ctx, r.db.Collection(workflowRunsColl), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "created_at", Value: bson.D{{Key: "$gte", Value: from}, {Key: "$lt", Value: to}}},
		{Key: "status", Value: bson.D{{Key: "$ne", Value: workflows.RunSkipped}}}}, func(w workflows.Run) error {
		return each(stats.WorkflowRun{WorkflowID: w.WorkflowID, Status: w.Status, CreatedAt: w.CreatedAt, StartedAt: w.StartedAt, EndedAt: w.EndedAt})
	}, options.Find().SetProjection(bson.D{{Key: "workflow_id", Value: 1}, {Key: "status", Value: 1}, {Key: "created_at", Value: 1},
		{Key: "started_at", Value: 1}, {Key: "ended_at", Value: 1}}))
}
