package store

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
)

const crmFieldsColl = "crm_fields"

func (r CRM) Fields(ctx context.Context, projectID string) ([]crm.Field, error) {
	cur, err := r.db.Collection(crmFieldsColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}},
		options.Find().SetSort(bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap(err, crm.FieldResource)
	}
	list := []crm.Field{}
	return list, wrap(cur.All(ctx, &list), crm.FieldResource)
}

func (r CRM) Field(ctx context.Context, projectID, id string) (crm.Field, error) {
	var f crm.Field
	err := r.db.Collection(crmFieldsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}).Decode(&f)
	return f, wrap(err, crm.FieldResource)
}

func (r CRM) InsertField(ctx context.Context, f crm.Field) error {
	_, err := r.db.Collection(crmFieldsColl).InsertOne(ctx, f)
	return wrap(err, crm.FieldResource)
}

func (r CRM) ReplaceField(ctx context.Context, f crm.Field) error {
	res, err := r.db.Collection(crmFieldsColl).ReplaceOne(ctx, bson.D{{Key: "_id", Value: f.UUID}, {Key: "project_id", Value: f.ProjectID}}, f)
	if err == nil && res.MatchedCount == 0 {
		return apperr.NotFoundf(crm.FieldResource)
	}
	return wrap(err, crm.FieldResource)
}

func (r CRM) DeleteField(ctx context.Context, projectID, id string) error {
	res, err := r.db.Collection(crmFieldsColl).DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}})
	if err == nil && res.DeletedCount == 0 {
		return apperr.NotFoundf(crm.FieldResource)
	}
	return wrap(err, crm.FieldResource)
}

// EachFields reads only the fields of the project's contacts or live deals, a batch at a time.
func (r CRM) EachFields(ctx context.Context, projectID, entity string, fn func(freeform.Object) error) error {
	coll, filter := r.db.Collection(contactsColl), bson.D{{Key: "project_id", Value: projectID}}
	if entity == crm.EntityDeal {
		coll, filter = r.db.Collection(dealsColl), append(filter, notDeleted)
	}
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "fields", Value: 1}}).SetBatchSize(500))
	if err != nil {
		return wrap(err, crm.FieldResource)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var doc struct {
			Fields freeform.Object `bson:"fields"`
		}
		if err := cur.Decode(&doc); err != nil {
			return wrap(err, crm.FieldResource)
		}
		if err := fn(doc.Fields); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), crm.FieldResource)
}

// EachContact decodes the project's contacts, a batch at a time, into one reused Contact.
func (r CRM) EachContact(ctx context.Context, projectID string, fn func(*crm.Contact) error) error {
	cur, err := r.db.Collection(contactsColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(500).SetProjection(bson.D{{Key: "_outbox", Value: 0}}))
	if err != nil {
		return wrap(err, "contact")
	}
	defer cur.Close(ctx)
	var c crm.Contact
	for cur.Next(ctx) {
		c = crm.Contact{}
		if err := cur.Decode(&c); err != nil {
			return wrap(err, "contact")
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return wrap(cur.Err(), "contact")
}
