package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

const tasksColl = "crm_tasks"

func (r CRM) InsertTask(ctx context.Context, t crm.Task, ev outbox.Event) error {
	return insertWithEvent(ctx, r.db.Collection(tasksColl), t, ev, crm.TaskResource)
}

func (r CRM) Task(ctx context.Context, projectID, botID, id string) (crm.Task, error) {
	var t crm.Task
	err := r.db.Collection(tasksColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID},
		{Key: "bot_id", Value: botID}, notDeleted}).Decode(&t)
	return t, wrap(err, crm.TaskResource)
}

func (r CRM) Tasks(ctx context.Context, f crm.TaskFilter, page paging.Page) ([]crm.Task, int, error) {
	filter := taskFilter(f)
	sort := bson.D{{Key: "_id", Value: 1}}
	switch {
	case f.ByDue:
		sort = bson.D{{Key: "due_at", Value: 1}, {Key: "_id", Value: 1}}
	case f.Snoozed:
		sort = bson.D{{Key: "snoozed_until", Value: 1}, {Key: "_id", Value: 1}}
	}
	tasks := []crm.Task{}
	total, err := findPageSorted(ctx, r.db.Collection(tasksColl), filter, sort, page, &tasks)
	return tasks, total, wrap(err, crm.TaskResource)
}

func (r CRM) DueTasks(ctx context.Context, now time.Time, limit int) ([]crm.Task, error) {
	cur, err := r.db.Collection(tasksColl).Find(ctx, bson.D{{Key: "notice_at", Value: bson.D{{Key: "$gt", Value: time.Time{}}, {Key: "$lte", Value: now}}}, notDeleted},
		options.Find().SetSort(bson.D{{Key: "notice_at", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, wrap(err, crm.TaskResource)
	}
	var tasks []crm.Task
	return tasks, wrap(cur.All(ctx, &tasks), crm.TaskResource)
}

func (r CRM) ReplaceTask(ctx context.Context, t crm.Task, ev outbox.Event) error {
	return replaceRevision(ctx, r.db.Collection(tasksColl), t.UUID, t.Rev, t, crm.TaskResource, ev)
}

func (r CRM) DeleteTask(ctx context.Context, t crm.Task, at time.Time, ev outbox.Event) error {
	return tombstone(ctx, r.db.Collection(tasksColl), t.UUID, at, ev, crm.TaskResource)
}

// taskFilter selects the live tasks f selects.
func taskFilter(f crm.TaskFilter) bson.D {
	filter := bson.D{{Key: "project_id", Value: f.ProjectID}, {Key: "bot_id", Value: f.BotID}, notDeleted}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: f.Status})
	}
	due := bson.D{}
	if !f.DueFrom.IsZero() {
		due = append(due, bson.E{Key: "$gte", Value: f.DueFrom})
	}
	if !f.DueBefore.IsZero() {
		due = append(due, bson.E{Key: "$lt", Value: f.DueBefore})
	}
	if len(due) > 0 {
		filter = append(filter, bson.E{Key: "due_at", Value: due})
	}
	if !f.Now.IsZero() {
		// An unsnoozed task's snoozed_until is the zero time, before any now.
		op := "$lte"
		if f.Snoozed {
			op = "$gt"
		}
		filter = append(filter, bson.E{Key: "snoozed_until", Value: bson.D{{Key: op, Value: f.Now}}})
	}
	if !f.CompletedBefore.IsZero() {
		filter = append(filter, bson.E{Key: "completed_at", Value: bson.D{{Key: "$gte", Value: f.CompletedFrom}, {Key: "$lt", Value: f.CompletedBefore}}})
	}
	return filter
}

func (r CRM) CountTasks(ctx context.Context, f crm.TaskFilter) (int, error) {
	n, err := r.db.Collection(tasksColl).CountDocuments(ctx, taskFilter(f))
	return int(n), wrap(err, crm.TaskResource)
}
