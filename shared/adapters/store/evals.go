package store

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

const evalDatasetsColl = "eval_datasets"

// Evals stores agents' eval datasets, one document each with its cases.
type Evals struct{ db *mongo.Database }

var _ evals.Repo = Evals{}

// NewEvals returns the eval repository of db.
func NewEvals(db *mongo.Database) Evals { return Evals{db: db} }

func (r Evals) datasets() *mongo.Collection { return r.db.Collection(evalDatasetsColl) }

func (r Evals) Insert(ctx context.Context, d evals.Dataset) error {
	_, err := r.datasets().InsertOne(ctx, d)
	return wrap(err, evals.Resource)
}

// Get reads the dataset by its _id alone (the embedded store's fast path) and checks its agent.
func (r Evals) Get(ctx context.Context, projectID, botID, id string) (evals.Dataset, error) {
	var d evals.Dataset
	err := r.datasets().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if err == nil && (d.ProjectID != projectID || d.BotID != botID) {
		return evals.Dataset{}, apperr.NotFoundf(evals.Resource)
	}
	return d, wrap(err, evals.Resource)
}

func byAgentOnly(projectID, botID string) bson.D {
	return bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}}
}

func (r Evals) List(ctx context.Context, projectID, botID string, page paging.Page) ([]evals.Dataset, int, error) {
	filter := byAgentOnly(projectID, botID)
	total, err := r.datasets().CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrap(err, evals.Resource)
	}
	cur, err := r.datasets().Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}).
		SetSkip(page.Skip()).SetLimit(int64(page.PerPage)).SetProjection(bson.D{{Key: "cases", Value: 0}}))
	if err != nil {
		return nil, 0, wrap(err, evals.Resource)
	}
	list := []evals.Dataset{}
	return list, int(total), wrap(cur.All(ctx, &list), evals.Resource)
}

func (r Evals) Count(ctx context.Context, projectID, botID string) (int, error) {
	n, err := r.datasets().CountDocuments(ctx, byAgentOnly(projectID, botID))
	return int(n), wrap(err, evals.Resource)
}

func (r Evals) Delete(ctx context.Context, projectID, botID, id string) error {
	res, err := r.datasets().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}})
	if err == nil && res.DeletedCount == 0 {
		return apperr.NotFoundf(evals.Resource)
	}
	return wrap(err, evals.Resource)
}
