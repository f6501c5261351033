package store

import (
	"context"
	"regexp"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
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
	defaults := 0
	for _, s := range stored {
		if s.PipelineID == "" {
			defaults++
		}
	}
	if err != nil || defaults >= len(stages) {
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

func (r CRM) InsertContact(ctx context.Context, c crm.Contact, ev outbox.Event) (crm.Contact, bool, error) {
	err := insertWithEvent(ctx, r.db.Collection(contactsColl), c, ev, crm.ContactResource)
	if apperr.As(err).Kind == apperr.Conflict {
		stored, err := r.Contact(ctx, c.ProjectID, c.UUID)
		return stored, false, err
	}
	return c, err == nil, err
}

func (r CRM) UpdateContact(ctx context.Context, c crm.Contact, ev outbox.Event) error {
	return r.updateInProject(ctx, contactsColl, c.UUID, c.ProjectID, c, ev, crm.ContactResource)
}

// updateInProject writes doc's fields over the document id of the project in coll, with ev in
// its outbox.
func (r CRM) updateInProject(ctx context.Context, coll, id, projectID string, doc any, ev outbox.Event, resource string) error {
	update, err := setOf(doc, ev)
	if err != nil {
		return err
	}
	_, err = r.db.Collection(coll).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}, update)
	return wrap(err, resource)
}

func (r CRM) Contact(ctx context.Context, projectID, id string) (crm.Contact, error) {
	var c crm.Contact
	err := r.db.Collection(contactsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}).Decode(&c)
	if c.Fields == nil {
		c.Fields = map[string]any{}
	}
	return c, wrap(err, "contact")
}

func (r CRM) CountContacts(ctx context.Context, projectID string) (int, error) {
	n, err := r.db.Collection(contactsColl).CountDocuments(ctx, bson.D{{Key: "project_id", Value: projectID}})
	return int(n), wrap(err, crm.ContactResource)
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

func (r CRM) SearchContacts(ctx context.Context, projectID, query string, page paging.Page) ([]crm.Contact, int, error) {
	re := bson.Regex{Pattern: regexp.QuoteMeta(query), Options: "i"}
	or := bson.A{}
	for _, f := range []string{"name", "email", "phone", "company"} {
		or = append(or, bson.D{{Key: f, Value: re}})
	}
	contacts := []crm.Contact{}
	total, err := findPage(ctx, r.db.Collection(contactsColl), bson.D{{Key: "project_id", Value: projectID}, {Key: "$or", Value: or}}, page, &contacts)
	for i := range contacts {
		if contacts[i].Fields == nil {
			contacts[i].Fields = map[string]any{}
		}
	}
	return contacts, total, wrap(err, "contact")
}

// DeleteContact removes the contact, then its notes.
func (r CRM) DeleteContact(ctx context.Context, c crm.Contact, ev outbox.Event) (outbox.Ref, error) {
	ref, err := deleteWithEvent(ctx, r.db, r.db.Collection(contactsColl), bson.D{{Key: "_id", Value: c.UUID}, {Key: "project_id", Value: c.ProjectID}}, ev)
	if err != nil {
		return ref, err
	}
	_, err = r.db.Collection(notesColl).DeleteMany(ctx, bson.D{{Key: "project_id", Value: c.ProjectID}, {Key: "contact_id", Value: c.UUID}})
	return ref, wrap(err, "note")
}

func (r CRM) InsertNote(ctx context.Context, n crm.Note) error {
	_, err := r.db.Collection(notesColl).InsertOne(ctx, n)
	return wrap(err, "note")
}

func (r CRM) Notes(ctx context.Context, projectID, contactID string, page paging.Page) ([]crm.Note, int, error) {
	notes := []crm.Note{}
	total, err := findPageSorted(ctx, r.db.Collection(notesColl), bson.D{{Key: "project_id", Value: projectID}, {Key: "contact_id", Value: contactID}},
		bson.D{{Key: "_id", Value: -1}}, page, &notes)
	return notes, total, wrap(err, "note")
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
	deals := []crm.Deal{}
	total, err := findPage(ctx, r.db.Collection(dealsColl), dealFilter(f), page, &deals)
	return deals, total, wrap(err, "deal")
}

func (r CRM) DealTotals(ctx context.Context, f crm.DealFilter) ([]crm.DealTotal, error) {
	// Two groupings of one accumulator each: FerretDB 1 answers 0 for every accumulator of a
	// $group but the first.
	counts, err := r.dealSums(ctx, f, 1)
	if err != nil {
		return nil, err
	}
	values, err := r.dealSums(ctx, f, "$value")
	if err != nil {
		return nil, err
	}
	totals := make([]crm.DealTotal, 0, len(counts))
	for key, n := range counts {
		totals = append(totals, crm.DealTotal{StageID: key.StageID, Currency: key.Currency, Count: int(n), Value: values[key]})
	}
	return totals, nil
}

// dealKey is a stage and a currency.
type dealKey struct {
	StageID  string `bson:"stage_id"`
	Currency string `bson:"currency"`
}

// dealSums sums expr over the live deals f selects, by stage and currency.
func (r CRM) dealSums(ctx context.Context, f crm.DealFilter, expr any) (map[dealKey]int64, error) {
	cur, err := r.db.Collection(dealsColl).Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: dealFilter(f)}},
		{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: bson.D{{Key: "stage_id", Value: "$stage_id"}, {Key: "currency", Value: "$currency"}}},
			{Key: "sum", Value: bson.D{{Key: "$sum", Value: expr}}},
		}}},
	})
	if err != nil {
		return nil, wrap(err, "deal")
	}
	var groups []struct {
		Key dealKey `bson:"_id"`
		Sum int64   `bson:"sum"`
	}
	if err := cur.All(ctx, &groups); err != nil {
		return nil, wrap(err, "deal")
	}
	sums := make(map[dealKey]int64, len(groups))
	for _, g := range groups {
		sums[g.Key] = g.Sum
	}
	return sums, nil
}

// dealFilter selects the live deals f describes.
func dealFilter(f crm.DealFilter) bson.D {
	filter := bson.D{{Key: "project_id", Value: f.ProjectID}, notDeleted}
	if f.BotID != "" {
		filter = append(filter, bson.E{Key: "bot_id", Value: f.BotID})
	}
	if f.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: f.Status})
	}
	if f.ContactID != "" {
		filter = append(filter, bson.E{Key: "contact_id", Value: f.ContactID})
	}
	if len(f.StageIDs) > 0 {
		filter = append(filter, bson.E{Key: "stage_id", Value: bson.D{{Key: "$in", Value: f.StageIDs}}})
	}
	return filter
}

func (r CRM) ReplaceDeal(ctx context.Context, d crm.Deal, ev outbox.Event) error {
	return replaceRevision(ctx, r.db.Collection(dealsColl), d.UUID, d.Rev, d, "deal", ev)
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

const pipelinesColl = "pipelines"

func (r CRM) InsertPipeline(ctx context.Context, p crm.Pipeline, ev outbox.Event) error {
	return insertWithEvent(ctx, r.db.Collection(pipelinesColl), p, ev, crm.PipelineResource)
}

func (r CRM) Pipelines(ctx context.Context, projectID string) ([]crm.Pipeline, error) {
	cur, err := r.db.Collection(pipelinesColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}},
		options.Find().SetSort(bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap(err, crm.PipelineResource)
	}
	var list []crm.Pipeline
	return list, wrap(cur.All(ctx, &list), crm.PipelineResource)
}

func (r CRM) RenamePipeline(ctx context.Context, projectID, id, name string, ev outbox.Event) error {
	_, err := r.db.Collection(pipelinesColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: name}, {Key: slot(ev.ID), Value: ev}}}})
	return wrap(err, crm.PipelineResource)
}

func (r CRM) DeletePipeline(ctx context.Context, projectID, id string, ev outbox.Event) (outbox.Ref, error) {
	ref, err := deleteWithEvent(ctx, r.db, r.db.Collection(pipelinesColl), bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}, ev)
	if err != nil {
		return ref, err
	}
	_, err = r.db.Collection(stagesColl).DeleteMany(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "pipeline_id", Value: id}})
	return ref, wrap(err, crm.StageResource)
}

func (r CRM) InsertStage(ctx context.Context, s crm.Stage, ev *outbox.Event) error {
	if ev != nil {
		return insertWithEvent(ctx, r.db.Collection(stagesColl), s, *ev, crm.StageResource)
	}
	_, err := r.db.Collection(stagesColl).InsertOne(ctx, s)
	return wrap(err, crm.StageResource)
}

func (r CRM) ReplaceStage(ctx context.Context, s crm.Stage, ev outbox.Event) error {
	return r.updateInProject(ctx, stagesColl, s.UUID, s.ProjectID, s, ev, crm.StageResource)
}

func (r CRM) DeleteStage(ctx context.Context, projectID, id string, ev outbox.Event) (outbox.Ref, error) {
	return deleteWithEvent(ctx, r.db, r.db.Collection(stagesColl), bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}, ev)
}

func (r CRM) EachDeal(ctx context.Context, projectID, botID string, since time.Time, fn func(*crm.Deal) error) error {
	filter := append(dealFilter(crm.DealFilter{ProjectID: projectID, BotID: botID}), bson.E{Key: "updated_at", Value: bson.D{{Key: "$gte", Value: since}}})
	cur, err := r.db.Collection(dealsColl).Find(ctx, filter,
		options.Find().SetBatchSize(500).SetProjection(bson.D{{Key: "_outbox", Value: 0}, {Key: "fields", Value: 0}}))
	if err != nil {
		return wrap(err, "deal")
	}
	defer cur.Close(ctx)
	var d crm.Deal
	for cur.Next(ctx) {
		d = crm.Deal{}
		if err := cur.Decode(&d); err != nil {
			return wrap(err, "deal")
		}
		if err := fn(&d); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), "deal")
}
