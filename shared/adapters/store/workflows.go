package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// Workflows stores workflow definitions.
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
