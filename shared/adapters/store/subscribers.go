package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/subscribers"
)

const subscribersColl = "subscribers"

// Subscribers stores agents' end users.
type Subscribers struct{ db *mongo.Database }

var _ subscribers.Repo = Subscribers{}

// NewSubscribers returns the subscribers repository of db.
func NewSubscribers(db *mongo.Database) Subscribers { return Subscribers{db: db} }

func (r Subscribers) Insert(ctx context.Context, s subscribers.Subscriber) error {
	_, err := r.db.Collection(subscribersColl).InsertOne(ctx, s)
	return wrap(err, subscribers.Resource)
}

func (r Subscribers) Get(ctx context.Context, botID, id string) (subscribers.Subscriber, error) {
	var s subscribers.Subscriber
	err := r.db.Collection(subscribersColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "bot_id", Value: botID}}).Decode(&s)
	return s, wrap(err, subscribers.Resource)
}

func (r Subscribers) Seen(ctx context.Context, botID, id string, at time.Time) error {
	_, err := r.db.Collection(subscribersColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "bot_id", Value: botID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "last_seen", Value: at}}}})
	return wrap(err, subscribers.Resource)
}

func (r Subscribers) CountChat(ctx context.Context, s subscribers.Subscriber) error {
	_, err := r.db.Collection(subscribersColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: s.ID}, {Key: "bot_id", Value: s.BotID}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "chats", Value: 1}}}, {Key: "$set", Value: bson.D{{Key: "last_seen", Value: s.LastSeen}}},
			{Key: "$setOnInsert", Value: bson.D{{Key: "project_id", Value: s.ProjectID}, {Key: "name", Value: s.Name}, {Key: "email", Value: s.Email},
				{Key: "external_id", Value: s.ExternalID}, {Key: "anonymous", Value: s.Anonymous}, {Key: "first_seen", Value: s.FirstSeen}}}},
		options.UpdateOne().SetUpsert(true))
	return wrap(err, subscribers.Resource)
}

func (r Subscribers) List(ctx context.Context, projectID, botID string, page paging.Page) ([]subscribers.Subscriber, int, error) {
	filter := bson.D{{Key: "project_id", Value: projectID}}
	if botID != "" {
		filter = append(filter, bson.E{Key: "bot_id", Value: botID})
	}
	out := []subscribers.Subscriber{}
	total, err := findPageSorted(ctx, r.db.Collection(subscribersColl), filter, bson.D{{Key: "last_seen", Value: -1}, {Key: "_id", Value: 1}}, page, &out)
	return out, total, wrap(err, subscribers.Resource)
}

// ssoColl keeps agents' sealed SSO secrets, one document per agent.
const ssoColl = "sso_secrets"

func (r Subscribers) ByExternalID(ctx context.Context, botID, externalID string) (subscribers.Subscriber, error) {
	var s subscribers.Subscriber
	err := r.db.Collection(subscribersColl).FindOne(ctx, bson.D{{Key: "bot_id", Value: botID}, {Key: "external_id", Value: externalID}}).Decode(&s)
	return s, wrap(err, subscribers.Resource)
}

func (r Subscribers) SignedIn(ctx context.Context, botID, id, name, email string, at time.Time) error {
	_, err := r.db.Collection(subscribersColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "bot_id", Value: botID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: name}, {Key: "email", Value: email}, {Key: "last_seen", Value: at}}}})
	return wrap(err, subscribers.Resource)
}

func (r Subscribers) SetSSOSecret(ctx context.Context, botID, sealed string) error {
	_, err := r.db.Collection(ssoColl).ReplaceOne(ctx, bson.D{{Key: "_id", Value: botID}},
		bson.D{{Key: "_id", Value: botID}, {Key: "sealed", Value: sealed}}, options.Replace().SetUpsert(true))
	return wrap(err, "sso_secret")
}

func (r Subscribers) SSOSecret(ctx context.Context, botID string) (string, error) {
	var doc struct {
		Sealed string `bson:"sealed"`
	}
	err := r.db.Collection(ssoColl).FindOne(ctx, bson.D{{Key: "_id", Value: botID}}).Decode(&doc)
	return doc.Sealed, wrap(err, "sso_secret")
}
