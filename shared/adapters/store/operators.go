package store

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/operators"
)

const operatorsColl = "operators"

// Operators stores the accounts' operators, one document each, with their token's hash.
type Operators struct{ db *mongo.Database }

var _ operators.Repo = Operators{}

// NewOperators returns the operator repository of db.
func NewOperators(db *mongo.Database) Operators { return Operators{db: db} }

func (r Operators) coll() *mongo.Collection { return r.db.Collection(operatorsColl) }

func (r Operators) Insert(ctx context.Context, o operators.Operator) error {
	_, err := r.coll().InsertOne(ctx, o)
	return wrap(err, operators.Resource)
}

func (r Operators) Get(ctx context.Context, accountID, id string) (operators.Operator, error) {
	var o operators.Operator
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "account_id", Value: accountID}}).Decode(&o)
	return o, wrap(err, operators.Resource)
}

func (r Operators) ByTokenHash(ctx context.Context, hash string) (operators.Operator, error) {
	var o operators.Operator
	err := r.coll().FindOne(ctx, bson.D{{Key: "token_hash", Value: hash}}).Decode(&o)
	return o, wrap(err, operators.Resource)
}

func (r Operators) List(ctx context.Context, accountID, projectID string, page paging.Page) ([]operators.Operator, int, error) {
	filter := bson.D{{Key: "account_id", Value: accountID}}
	if projectID != "" {
		filter = append(filter, bson.E{Key: "project_ids", Value: projectID})
	}
	list := []operators.Operator{}
	total, err := findPageSorted(ctx, r.coll(), filter, bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}, page, &list)
	return list, total, wrap(err, operators.Resource)
}

// Replace writes o over revision o.Rev-1 by one update.
func (r Operators) Replace(ctx context.Context, o operators.Operator) error {
	return replaceRevision(ctx, r.coll(), o.ID, o.Rev, o, operators.Resource)
}

func (r Operators) Delete(ctx context.Context, accountID, id string) error {
	res, err := r.coll().DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "account_id", Value: accountID}})
	if err != nil {
		return wrap(err, operators.Resource)
	}
	if res.DeletedCount == 0 {
		return apperr.NotFoundf(operators.Resource)
	}
	return nil
}
