package store

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

const versionsColl = "bot_versions"

// Versions stores agents' versions, each under the id its agent and number make
// (versionID): the id is what makes a number one version, and every read is by id, one or a
// range.
type Versions struct{ db *mongo.Database }

var _ agents.VersionRepo = Versions{}

// NewVersions returns the version repository of db.
func NewVersions(db *mongo.Database) Versions { return Versions{db: db} }

// versionDoc is a version as stored.
type versionDoc struct {
	ID             string `bson:"_id"`
	agents.Version `bson:",inline"`
}

// versionID is the id of the agent's version n: its number zero-padded, so that the ids of an
// agent's versions sort as their numbers.
func versionID(botID string, n int) string { return fmt.Sprintf("%s/%010d", botID, n) }

// versionsOf matches the versions of the agent: the ids from "<bot>/" up to "<bot>0" ('0' follows
// '/').
func versionsOf(botID string) bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: botID + "/"}, {Key: "$lt", Value: botID + "0"}}}}
}

// Keep inserts vs in one unordered write; a version stored already (its id taken) is left.
func (v Versions) Keep(ctx context.Context, vs ...agents.Version) error {
	docs := make([]any, len(vs))
	for i, ver := range vs {
		docs[i] = versionDoc{ID: versionID(ver.BotID, ver.Number), Version: ver}
	}
	_, err := v.db.Collection(versionsColl).InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	var bulk mongo.BulkWriteException
	if errors.As(err, &bulk) && bulk.WriteConcernError == nil && allDuplicates(bulk.WriteErrors) {
		return nil
	}
	return wrap(err, "version")
}

func allDuplicates(errs []mongo.BulkWriteError) bool {
	for _, e := range errs {
		if !mongo.IsDuplicateKeyError(e) {
			return false
		}
	}
	return true
}

func (v Versions) Version(ctx context.Context, botID string, n int) (agents.Version, error) {
	var d versionDoc
	err := v.db.Collection(versionsColl).FindOne(ctx, bson.D{{Key: "_id", Value: versionID(botID, n)}}).Decode(&d)
	return d.Version, wrap(err, "version")
}

func (v Versions) Versions(ctx context.Context, botID string, page paging.Page) ([]agents.Version, int, error) {
	var docs []versionDoc
	total, err := findPageSorted(ctx, v.db.Collection(versionsColl), versionsOf(botID), bson.D{{Key: "_id", Value: -1}}, page, &docs)
	list := make([]agents.Version, len(docs))
	for i, d := range docs {
		list[i] = d.Version
	}
	return list, total, wrap(err, "version")
}
