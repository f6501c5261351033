package store

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

const (
	evalRunsColl    = "eval_runs"
	evalResultsColl = "eval_results"
)

// EvalRuns stores eval runs, one document each, and their cases, one document each under the
// id "<run>/<index, zero-padded>": a run's cases are a range of ids, read, claimed and counted
// by the _id index alone.
type EvalRuns struct{ db *mongo.Database }

var _ evals.RunRepo = EvalRuns{}

// NewEvalRuns returns the eval run repository of db.
func NewEvalRuns(db *mongo.Database) EvalRuns { return EvalRuns{db: db} }

func (r EvalRuns) runs() *mongo.Collection    { return r.db.Collection(evalRunsColl) }
func (r EvalRuns) results() *mongo.Collection { return r.db.Collection(evalResultsColl) }

// casesOf matches the cases of the run: the ids from "<run>/" up to "<run>0" ('0' follows '/').
func casesOf(runID string) bson.E {
	return bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: runID + "/"}, {Key: "$lt", Value: runID + "0"}}}
}

// InsertRun stores the cases first: a run is never stored without them.
func (r EvalRuns) InsertRun(ctx context.Context, run evals.Run, cases []evals.Result) error {
	docs := make([]any, len(cases))
	for i, c := range cases {
		docs[i] = c
	}
	if _, err := r.results().InsertMany(ctx, docs); err != nil {
		return wrap(err, evals.RunResource)
	}
	_, err := r.runs().InsertOne(ctx, run)
	return wrap(err, evals.RunResource)
}

// Run reads the run by its _id alone and checks its agent.
func (r EvalRuns) Run(ctx context.Context, projectID, botID, id string) (evals.Run, error) {
	run, err := r.FindRun(ctx, id)
	if err == nil && (run.ProjectID != projectID || run.BotID != botID) {
		return evals.Run{}, apperr.NotFoundf(evals.RunResource)
	}
	return run, err
}

func (r EvalRuns) FindRun(ctx context.Context, id string) (evals.Run, error) {
	var run evals.Run
	err := r.runs().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&run)
	return run, wrap(err, evals.RunResource)
}

func (r EvalRuns) Runs(ctx context.Context, projectID, botID string, page paging.Page) ([]evals.Run, int, error) {
	filter := byAgentOnly(projectID, botID)
	total, err := r.runs().CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrap(err, evals.RunResource)
	}
	cur, err := r.runs().Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}).
		SetSkip(page.Skip()).SetLimit(int64(page.PerPage)))
	if err != nil {
		return nil, 0, wrap(err, evals.RunResource)
	}
	list := []evals.Run{}
	return list, int(total), wrap(cur.All(ctx, &list), evals.RunResource)
}

func (r EvalRuns) LatestRun(ctx context.Context, projectID, botID, datasetID string, version int) (evals.Run, error) {
	filter := append(byAgentOnly(projectID, botID), bson.E{Key: "dataset_id", Value: datasetID},
		bson.E{Key: "version", Value: version}, bson.E{Key: "status", Value: evals.RunDone})
	var run evals.Run
	err := r.runs().FindOne(ctx, filter, options.FindOne().SetSort(bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}})).Decode(&run)
	return run, wrap(err, evals.RunResource)
}

func (r EvalRuns) SetStatus(ctx context.Context, id, from, to string) error {
	_, err := r.runs().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "status", Value: from}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: to}}}})
	return wrap(err, evals.RunResource)
}

func (r EvalRuns) Finish(ctx context.Context, run evals.Run) error {
	_, err := r.runs().UpdateOne(ctx, bson.D{{Key: "_id", Value: run.UUID}, {Key: "status", Value: bson.D{{Key: "$ne", Value: evals.RunDone}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: run.Status}, {Key: "graders", Value: run.Graders},
			{Key: "passed", Value: run.Passed}, {Key: "tokens", Value: run.Tokens}, {Key: "cost", Value: run.Cost},
			{Key: "finished_at", Value: run.FinishedAt}}}})
	return wrap(err, evals.RunResource)
}

func (r EvalRuns) Claim(ctx context.Context, runID, owner string, until, now time.Time) (evals.Result, bool, error) {
	filter := bson.D{casesOf(runID), {Key: "done", Value: false}, {Key: "lease_until", Value: bson.D{{Key: "$lt", Value: now}}}}
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "owner", Value: owner}, {Key: "lease_until", Value: until}}}}
	var res evals.Result
	err := r.results().FindOneAndUpdate(ctx, filter, update,
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "_id", Value: 1}}).SetReturnDocument(options.After)).Decode(&res)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return evals.Result{}, false, nil
	}
	return res, err == nil, wrap(err, evals.RunResource)
}

func (r EvalRuns) Release(ctx context.Context, res evals.Result, owner string) error {
	set := bson.D{{Key: "owner", Value: ""}, {Key: "lease_until", Value: time.Time{}}}
	if res.Answered {
		set = append(set, answerOf(res)...)
	}
	_, err := r.results().UpdateOne(ctx, bson.D{{Key: "_id", Value: res.ID}, {Key: "owner", Value: owner}, {Key: "done", Value: false}},
		bson.D{{Key: "$set", Value: set}})
	return wrap(err, evals.RunResource)
}

// answerOf are the fields of res's answer.
func answerOf(res evals.Result) bson.D {
	return bson.D{{Key: "answered", Value: true}, {Key: "answer", Value: res.Answer}, {Key: "sources", Value: res.Sources},
		{Key: "tool_calls", Value: res.ToolCalls}, {Key: "tokens", Value: res.Tokens}, {Key: "cost", Value: res.Cost},
		{Key: "latency_ms", Value: res.LatencyMS}}
}

func (r EvalRuns) Grade(ctx context.Context, res evals.Result, owner string) (bool, error) {
	u, err := r.results().UpdateOne(ctx, bson.D{{Key: "_id", Value: res.ID}, {Key: "owner", Value: owner}, {Key: "done", Value: false}},
		bson.D{{Key: "$set", Value: append(answerOf(res), bson.E{Key: "done", Value: true}, bson.E{Key: "grades", Value: res.Grades},
			bson.E{Key: "error", Value: res.Error}, bson.E{Key: "graded_at", Value: res.GradedAt})}})
	if err != nil {
		return false, wrap(err, evals.RunResource)
	}
	return u.MatchedCount == 1, nil
}

func (r EvalRuns) Results(ctx context.Context, runID string) ([]evals.Result, error) {
	cur, err := r.results().Find(ctx, bson.D{casesOf(runID)}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap(err, evals.RunResource)
	}
	list := []evals.Result{}
	return list, wrap(cur.All(ctx, &list), evals.RunResource)
}

func (r EvalRuns) ResultsPage(ctx context.Context, runID string, page paging.Page) ([]evals.Result, error) {
	cur, err := r.results().Find(ctx, bson.D{casesOf(runID)}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).
		SetSkip(page.Skip()).SetLimit(int64(page.PerPage)))
	if err != nil {
		return nil, wrap(err, evals.RunResource)
	}
	list := []evals.Result{}
	return list, wrap(cur.All(ctx, &list), evals.RunResource)
}

func (r EvalRuns) Ungraded(ctx context.Context, runID string) (int, error) {
	n, err := r.results().CountDocuments(ctx, bson.D{casesOf(runID), {Key: "done", Value: false}})
	return int(n), wrap(err, evals.RunResource)
}

func (r EvalRuns) Unfinished(ctx context.Context, before time.Time, limit int) ([]evals.Run, error) {
	cur, err := r.runs().Find(ctx, bson.D{{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{evals.RunQueued, evals.RunRunning}}}},
		{Key: "created_at", Value: bson.D{{Key: "$lt", Value: before}}}},
		options.Find().SetSort(bson.D{{Key: "created_at", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, wrap(err, evals.RunResource)
	}
	list := []evals.Run{}
	return list, wrap(cur.All(ctx, &list), evals.RunResource)
}

// SetTask matches a run without a task field (stored before runs kept theirs) as one whose
// task is "".
func (r EvalRuns) SetTask(ctx context.Context, id, from, task string) (bool, error) {
	current := bson.E{Key: "task", Value: from}
	if from == "" {
		current = bson.E{Key: "task", Value: bson.D{{Key: "$in", Value: bson.A{"", nil}}}}
	}
	u, err := r.runs().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, current},
		bson.D{{Key: "$set", Value: bson.D{{Key: "task", Value: task}}}})
	if err != nil {
		return false, wrap(err, evals.RunResource)
	}
	return u.MatchedCount == 1, nil
}
