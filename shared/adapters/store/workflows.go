package store

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// workflowRevisionsColl keeps each form of a workflow under its revision.
const workflowRevisionsColl = "workflow_revisions"

// Workflows stores workflow definitions and the forms of their revisions.
type Workflows struct{ db *mongo.Database }

var _ workflows.Repo = Workflows{}

// NewWorkflows returns the workflow repository of db.
func NewWorkflows(db *mongo.Database) Workflows { return Workflows{db: db} }

func (r Workflows) Insert(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	return insertWithEvent(ctx, r.db.Collection(workflowsColl), w, ev, "workflow")
}

func (r Workflows) Get(ctx context.Context, projectID, botID, id string) (workflows.Workflow, error) {
	var w workflows.Workflow
	err := r.db.Collection(workflowsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID},
		{Key: "bot_id", Value: botID}, notDeleted}).Decode(&w)
	return w, wrap(err, "workflow")
}

func (r Workflows) List(ctx context.Context, projectID, botID string, page paging.Page) ([]workflows.Workflow, int, error) {
	list := []workflows.Workflow{}
	total, err := findPage(ctx, r.db.Collection(workflowsColl),
		bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted}, page, &list)
	return list, total, wrap(err, "workflow")
}

func (r Workflows) Replace(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	return replaceRevision(ctx, r.db.Collection(workflowsColl), w.UUID, w.Rev, w, "workflow", ev)
}

func (r Workflows) Delete(ctx context.Context, w workflows.Workflow, at time.Time, ev outbox.Event) error {
	return tombstone(ctx, r.db.Collection(workflowsColl), w.UUID, at, ev, "workflow")
}

func (r Workflows) Triggered(ctx context.Context, projectID, botID, eventType string) ([]workflows.Workflow, error) {
	return r.find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "trigger_event", Value: eventType},
		{Key: "bot_id", Value: botID}, {Key: "trigger_type", Value: workflows.TriggerTypeEvent}, {Key: "is_active", Value: true}, notDeleted})
}

func (r Workflows) Scheduled(ctx context.Context) ([]workflows.Workflow, error) {
	return r.find(ctx, bson.D{{Key: "trigger_type", Value: workflows.TriggerTypeSchedule}, {Key: "is_active", Value: true}, notDeleted})
}

func (r Workflows) All(ctx context.Context, projectID, botID string) ([]workflows.Workflow, error) {
	cur, err := r.db.Collection(workflowsColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap(err, "workflow")
	}
	list := []workflows.Workflow{}
	return list, wrap(cur.All(ctx, &list), "workflow")
}

// Restore sets every field of w but its Rev, which it increments (so that no update that read
// the workflow before it matches after it), and removes its tombstone.
func (r Workflows) Restore(ctx context.Context, w workflows.Workflow, ev outbox.Event) error {
	update, err := setOf(w, ev)
	if err != nil {
		return err
	}
	set := update[0].Value.(bson.D)
	for i, e := range set {
		if e.Key == "rev" {
			set = append(set[:i], set[i+1:]...)
			break
		}
	}
	update = bson.D{{Key: "$set", Value: set}, {Key: "$unset", Value: bson.D{{Key: "deleted_at", Value: ""}}}, {Key: "$inc", Value: bson.D{{Key: "rev", Value: 1}}}}
	_, err = r.db.Collection(workflowsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: w.UUID}}, update, options.UpdateOne().SetUpsert(true))
	return wrap(err, "workflow")
}

// workflowRevision is a workflow's form kept under its revision.
type workflowRevision struct {
	ID       string             `bson:"_id"`
	Workflow workflows.Workflow `bson:"workflow"`
}

// KeepRevisions inserts each workflow's form in one unordered write; a revision kept already
// (its id taken) is left.
func (r Workflows) KeepRevisions(ctx context.Context, ws ...workflows.Workflow) error {
	docs := make([]any, len(ws))
	for i, w := range ws {
		docs[i] = workflowRevision{ID: w.Revision, Workflow: w}
	}
	_, err := r.db.Collection(workflowRevisionsColl).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	var bulk mongo.BulkWriteException
	if errors.As(err, &bulk) && bulk.WriteConcernError == nil && allDuplicates(bulk.WriteErrors) {
		return nil
	}
	return wrap(err, "workflow_revision")
}

func (r Workflows) Revision(ctx context.Context, projectID, botID, revision string) (workflows.Workflow, error) {
	var d workflowRevision
	err := r.db.Collection(workflowRevisionsColl).FindOne(ctx, bson.D{{Key: "_id", Value: revision},
		{Key: "workflow.project_id", Value: projectID}, {Key: "workflow.bot_id", Value: botID}}).Decode(&d)
	return d.Workflow, wrap(err, "workflow_revision")
}

func (r Workflows) find(ctx context.Context, filter bson.D) ([]workflows.Workflow, error) {
	cur, err := r.db.Collection(workflowsColl).Find(ctx, filter)
	if err != nil {
		return nil, wrap(err, "workflow")
	}
	var list []workflows.Workflow
	if err := cur.All(ctx, &list); err != nil {
		return nil, wrap(err, "workflow")
	}
	return list, nil
}
