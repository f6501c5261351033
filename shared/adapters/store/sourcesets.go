package store

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// sourceSetsColl holds the sets of memory sources agents' versions record, each once: its _id is
// the agent's id and the set's digest (sourceSetID), and it never changes.
const sourceSetsColl = "source_sets"

type sourceSetDoc struct {
	ID        string   `bson:"_id"`
	ProjectID string   `bson:"project_id"`
	BotID     string   `bson:"bot_id"`
	IDs       []string `bson:"ids"`
}

func sourceSetID(botID, digest string) string { return botID + "/" + digest }

func (m Memory) SourceSet(ctx context.Context, botID, digest string) ([]string, error) {
	var d sourceSetDoc
	err := m.db.Collection(sourceSetsColl).FindOne(ctx, bson.D{{Key: "_id", Value: sourceSetID(botID, digest)}}).Decode(&d)
	return d.IDs, wrap(err, "source_set")
}

func (m Memory) PutSourceSet(ctx context.Context, projectID, botID, digest string, ids []string) error {
	_, err := m.db.Collection(sourceSetsColl).InsertOne(ctx, sourceSetDoc{ID: sourceSetID(botID, digest), ProjectID: projectID, BotID: botID, IDs: ids})
	if mongo.IsDuplicateKeyError(err) {
		return nil
	}
	return wrap(err, "source_set")
}
