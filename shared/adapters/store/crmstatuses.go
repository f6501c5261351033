package store

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// crmStatusesColl holds a document per project whose contact statuses were written, by project id.
const crmStatusesColl = "crm_statuses"

const statusResource = "contact_statuses"

func (r CRM) ContactStatuses(ctx context.Context, projectID string) (crm.StatusSet, error) {
	var set crm.StatusSet
	err := r.db.Collection(crmStatusesColl).FindOne(ctx, bson.D{{Key: "_id", Value: projectID}}).Decode(&set)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return crm.StatusSet{ProjectID: projectID, Statuses: crm.DefaultStatuses(projectID)}, nil
	}
	return set, wrap(err, statusResource)
}

// WriteContactStatuses inserts the first revision (a duplicate is a write meanwhile) and
// replaces the revision before any later one.
func (r CRM) WriteContactStatuses(ctx context.Context, set crm.StatusSet) error {
	coll := r.db.Collection(crmStatusesColl)
	if set.Rev == 1 {
		_, err := coll.InsertOne(ctx, set)
		return wrap(err, statusResource)
	}
	res, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: set.ProjectID}, {Key: "rev", Value: set.Rev - 1}}, set)
	if err == nil && res.MatchedCount == 0 {
		return apperr.New(apperr.Conflict, "contact_statuses_changed", "The project's contact statuses changed meanwhile.")
	}
	return wrap(err, statusResource)
}
