package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tenancy"
)

const (
	accountsColl = "accounts"
	keysColl     = "api_keys"
	projectsColl = "projects"
)

// Tenancy stores accounts, keys and projects.
type Tenancy struct{ db *mongo.Database }

var _ tenancy.Repo = Tenancy{}

// NewTenancy returns the tenancy repository of db.
func NewTenancy(db *mongo.Database) Tenancy { return Tenancy{db: db} }

func (t Tenancy) InsertAccount(ctx context.Context, a tenancy.Account) error {
	_, err := t.db.Collection(accountsColl).InsertOne(ctx, a)
	return wrap(err, "account")
}

func (t Tenancy) Account(ctx context.Context, id string) (tenancy.Account, error) {
	var a tenancy.Account
	err := t.db.Collection(accountsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&a)
	return a, wrap(err, "account")
}

func (t Tenancy) InsertKey(ctx context.Context, k tenancy.Key) error {
	_, err := t.db.Collection(keysColl).InsertOne(ctx, k)
	return wrap(err, "key")
}

func (t Tenancy) KeyByHash(ctx context.Context, hash string) (tenancy.Key, error) {
	var k tenancy.Key
	err := t.db.Collection(keysColl).FindOne(ctx, bson.D{{Key: "hash", Value: hash}}).Decode(&k)
	return k, wrap(err, "key")
}

func (t Tenancy) Keys(ctx context.Context, accountID string) ([]tenancy.Key, error) {
	cur, err := t.db.Collection(keysColl).Find(ctx, bson.D{{Key: "account_id", Value: accountID}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap(err, "key")
	}
	keys := []tenancy.Key{}
	return keys, wrap(cur.All(ctx, &keys), "key")
}

func (t Tenancy) RevokeKey(ctx context.Context, accountID, keyID string, at time.Time) error {
	res, err := t.db.Collection(keysColl).UpdateOne(ctx,
		bson.D{{Key: "_id", Value: keyID}, {Key: "account_id", Value: accountID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "revoked_at", Value: at}}}})
	if err != nil {
		return wrap(err, "key")
	}
	if res.MatchedCount == 0 {
		return apperr.NotFoundf("key")
	}
	return nil
}

func (t Tenancy) InsertProject(ctx context.Context, p tenancy.Project) error {
	_, err := t.db.Collection(projectsColl).InsertOne(ctx, p)
	return wrap(err, "project")
}

// Project reads the project by _id alone and checks its account on the document read: every
// store answers a lookup by _id from its primary key (the embedded one only when the filter is
// exactly that), and another account's project is not found, exactly like a missing one.
func (t Tenancy) Project(ctx context.Context, accountID, id string) (tenancy.Project, error) {
	var p tenancy.Project
	err := t.db.Collection(projectsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&p)
	if err == nil && p.AccountID != accountID {
		p, err = tenancy.Project{}, mongo.ErrNoDocuments
	}
	return p, wrap(err, "project")
}

func (t Tenancy) Projects(ctx context.Context, accountID string, page paging.Page) ([]tenancy.Project, int, error) {
	projects := []tenancy.Project{}
	total, err := findPage(ctx, t.db.Collection(projectsColl), bson.D{{Key: "account_id", Value: accountID}}, page, &projects)
	return projects, total, wrap(err, "project")
}
