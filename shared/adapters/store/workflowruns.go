package store

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

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
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: f.Status})
	}
	list := []workflows.Run{}
	total, err := findPageSorted(ctx, r.coll(), filter, bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}, page, &list)
	return list, total, wrap(err, workflows.RunResource)
}

func (r WorkflowRuns) SaveRun(ctx context.Context, run workflows.Run, ev *outbox.Event) error {
	var evs []outbox.Event
	if ev != nil {
		evs = append(evs, *ev)
	}
	update, err := setOf(run, evs...)
	if err != nil {
		return err
	}
	if _, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: run.UUID}}, update); err != nil {
		return wrap(err, workflows.RunResource)
	}
	return nil
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
