package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/apperr"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/paging"
)

// CRM stores deals, contacts and stages.
type CRM struct{ db *mongo.Database }

var _ crm.Repo = CRM{}

// NewCRM returns the CRM repository of db.
func NewCRM(db *mongo.Database) CRM { return CRM{db: db} }

func (r CRM) EnsureStages(ctx context.Context, stages []crm.Stage) ([]crm.Stage, error) {
	if len(stages) == 0 {
		return nil, nil
	}
	projectID := stages[0].ProjectID
	stored, err := r.stages(ctx, projectID)
	if err != nil || len(stored) >= len(stages) {
		return stored, err
	}
	for _, s := range stages {
		if _, err := r.db.Collection(stagesColl).InsertOne(ctx, s); err != nil && !mongo.IsDuplicateKeyError(err) {
			return nil, wrap(err, "stage")
		}
	}
	return r.stages(ctx, projectID)
}

func (r CRM) stages(ctx context.Context, projectID string) ([]crm.Stage, error) {
	cur, err := r.db.Collection(stagesColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}},
		options.Find().SetSort(bson.D{{Key: "sort_order", Value: 1}}))
	if err != nil {
		return nil, wrap(err, "stage")
	}
	var stored []crm.Stage
	return stored, wrap(cur.All(ctx, &stored), "stage")
}

func (r CRM) InsertContact(ctx context.Context, c crm.Contact) (crm.Contact, error) {
	_, err := r.db.Collection(contactsColl).InsertOne(ctx, c)
	if mongo.IsDuplicateKeyError(err) {
		return r.Contact(ctx, c.ProjectID, c.UUID)
	}
	return c, wrap(err, "contact")
}

func (r CRM) UpdateContact(ctx context.Context, c crm.Contact) error {
	_, err := r.db.Collection(contactsColl).ReplaceOne(ctx, bson.D{{Key: "_id", Value: c.UUID}, {Key: "project_id", Value: c.ProjectID}}, c)
	return wrap(err, "contact")
}

func (r CRM) Contact(ctx context.Context, projectID, id string) (crm.Contact, error) {
	var c crm.Contact
	err := r.db.Collection(contactsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}).Decode(&c)
	if c.Fields == nil {
		c.Fields = map[string]any{}
	}
	return c, wrap(err, "contact")
}

func (r CRM) Contacts(ctx context.Context, projectID string, page paging.Page) ([]crm.Contact, int, error) {
	contacts := []crm.Contact{}
	total, err := findPage(ctx, r.db.Collection(contactsColl), bson.D{{Key: "project_id", Value: projectID}}, page, &contacts)
	for i := range contacts {
		if contacts[i].Fields == nil {
			contacts[i].Fields = map[string]any{}
		}
	}
	return contacts, total, wrap(err, "contact")
}

func (r CRM) InsertDeal(ctx context.Context, d crm.Deal, ev outbox.Event) error {
	return insertWithEvent(ctx, r.db.Collection(dealsColl), d, ev, "deal")
}

func (r CRM) Deal(ctx context.Context, projectID, botID, id string) (crm.Deal, error) {
	var d crm.Deal
	err := r.db.Collection(dealsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID},
		{Key: "bot_id", Value: botID}, notDeleted}).Decode(&d)
	return d, wrap(err, "deal")
}

func (r CRM) Deals(ctx context.Context, f crm.DealFilter, page paging.Page) ([]crm.Deal, int, error) {
	filter := bson.D{{Key: "project_id", Value: f.ProjectID}, {Key: "bot_id", Value: f.BotID}, notDeleted}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: f.Status})
	}
	if f.StageID != "" {
		filter = append(filter, bson.E{Key: "stage_id", Value: f.StageID})
	}
	deals := []crm.Deal{}
	total, err := findPage(ctx, r.db.Collection(dealsColl), filter, page, &deals)
	return deals, total, wrap(err, "deal")
}

func (r CRM) ReplaceDeal(ctx context.Context, d crm.Deal, ev outbox.Event) error {
	return replaceRevision(ctx, r.db.Collection(dealsColl), d.UUID, d.Rev, d, ev, "deal")
}

func (r CRM) DeleteDeal(ctx context.Context, d crm.Deal, at time.Time, ev outbox.Event) error {
	return tombstone(ctx, r.db.Collection(dealsColl), d.UUID, at, ev, "deal")
}

// tombstone marks the live document id deleted, with its event.
func tombstone(ctx context.Context, coll *mongo.Collection, id string, at time.Time, ev outbox.Event, resource string) error {
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, notDeleted},
		bson.D{{Key: "$set", Value: bson.D{{Key: "deleted_at", Value: at}, {Key: slot(ev.ID), Value: ev}}}})
	if err != nil {
		return wrap(err, resource)
	}
	if res.MatchedCount == 0 {
		return apperr.NotFoundf(resource)
	}
	return nil
}
