package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

const (
	workflowRunsColl = "workflow_runs"
	// secretsColl keeps each project's webhook signing secret, by project id.
	secretsColl = "webhook_secrets"
)

// WorkflowRuns stores workflow runs, one document per run, and the projects' webhook signing
// secrets. A run is read by _id alone and checked after, as the embedded store uses an index
// only for that.
type WorkflowRuns struct{ db *mongo.Database }

var _ workflows.RunRepo = WorkflowRuns{}

// NewWorkflowRuns returns the workflow run repository of db.
func NewWorkflowRuns(db *mongo.Database) WorkflowRuns { return WorkflowRuns{db: db} }

func (r WorkflowRuns) coll() *mongo.Collection { return r.db.Collection(workflowRunsColl) }

func (r WorkflowRuns) InsertRun(ctx context.Context, run workflows.Run) error {
	_, err := r.coll().InsertOne(ctx, run)
	return wrap(err, workflows.RunResource)
}

func (r WorkflowRuns) LoadRun(ctx context.Context, id string) (workflows.Run, error) {
	var run workflows.Run
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&run)
	return run, wrap(err, workflows.RunResource)
}

func (r WorkflowRuns) Run(ctx context.Context, projectID, botID, id string) (workflows.Run, error) {
	run, err := r.LoadRun(ctx, id)
	if err == nil && (run.ProjectID != projectID || run.BotID != botID) {
		return workflows.Run{}, wrap(mongo.ErrNoDocuments, workflows.RunResource)
	}
	return run, err
}

func (r WorkflowRuns) Runs(ctx context.Context, f workflows.RunFilter, page paging.Page) ([]workflows.Run, int, error) {
	filter := bson.D{{Key: "project_id", Value: f.ProjectID}, {Key: "bot_id", Value: f.BotID}}
	if f.WorkflowID != "" {
		filter = append(filter, bson.E{Key: "workflow_id", Value: f.WorkflowID})
	}
	switch {
	case f.Status != "":
		filter = append(filter, bson.E{Key: "status", Value: f.Status})
	case !f.Skipped:
		filter = append(filter, bson.E{Key: "status", Value: bson.D{{Key: "$ne", Value: workflows.RunSkipped}}})
	}
	list := []workflows.Run{}
	total, err := findPageSorted(ctx, r.coll(), filter, bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}, page, &list)
	return list, total, wrap(err, workflows.RunResource)
}

func (r WorkflowRuns) Claim(ctx context.Context, id string, l workflows.Lease, now time.Time) (workflows.Run, bool, error) {
	filter := bson.D{{Key: "_id", Value: id},
		{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{workflows.RunQueued, workflows.RunRunning}}}},
		{Key: "$or", Value: bson.A{
			bson.D{{Key: "owner", Value: ""}},
			// Runs stored before leases have no owner.
			bson.D{{Key: "owner", Value: bson.D{{Key: "$exists", Value: false}}}},
			bson.D{{Key: "lease_until", Value: bson.D{{Key: "$lt", Value: now}}}}}}}
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "owner", Value: l.Owner}, {Key: "lease_until", Value: l.Until}}}}
	var run workflows.Run
	err := r.coll().FindOneAndUpdate(ctx, filter, update, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&run)
	if errors.Is(err, mongo.ErrNoDocuments) {
		// Not claimable: ended, held, or gone.
		run, err = r.LoadRun(ctx, id)
		return run, false, err
	}
	return run, err == nil, wrap(err, workflows.RunResource)
}

func (r WorkflowRuns) Renew(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	return renew(ctx, r.coll(), id, owner, until, workflows.RunResource)
}

func (r WorkflowRuns) Release(ctx context.Context, id, owner string) error {
	_, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "owner", Value: owner}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "owner", Value: ""}, {Key: "lease_until", Value: nil}}}})
	return wrap(err, workflows.RunResource)
}

func (r WorkflowRuns) SaveRun(ctx context.Context, run workflows.Run, owner string, ev *outbox.Event) error {
	var evs []outbox.Event
	if ev != nil {
		evs = append(evs, *ev)
	}
	update, err := setOf(run, evs...)
	if err != nil {
		return err
	}
	// The lease is the holder's and its renewal's to write, not the run's.
	set := update[0].Value.(bson.D)
	update[0].Value = slices.DeleteFunc(set, func(e bson.E) bool { return e.Key == "owner" || e.Key == "lease_until" })
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: run.UUID}, {Key: "owner", Value: owner}}, update)
	switch {
	case err != nil:
		return wrap(err, workflows.RunResource)
	case res.MatchedCount == 0:
		return workflows.ErrLost
	}
	return nil
}

func (r WorkflowRuns) PutSkipped(ctx context.Context, logs []workflows.Run) error {
	models := make([]mongo.WriteModel, len(logs))
	for i, l := range logs {
		models[i] = mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: l.UUID}}).SetReplacement(l).SetUpsert(true)
	}
	_, err := r.coll().BulkWrite(ctx, models)
	return wrap(err, workflows.RunResource)
}

func (r WorkflowRuns) Secret(ctx context.Context, projectID, fresh string) (string, error) {
	var doc struct {
		Secret string `bson:"secret"`
	}
	coll := r.db.Collection(secretsColl)
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: projectID}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: projectID}, {Key: "secret", Value: fresh}})
		if err == nil {
			return fresh, nil
		}
		if mongo.IsDuplicateKeyError(err) {
			err = coll.FindOne(ctx, bson.D{{Key: "_id", Value: projectID}}).Decode(&doc)
		}
	}
	return doc.Secret, wrap(err, "webhook_secret")
}
