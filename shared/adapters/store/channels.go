package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

const (
	channelsColl        = "channels"
	channelMessagesColl = "channel_messages"
	channelThreadsColl  = "channel_threads"
	channelSendsColl    = "channel_sends"
)

// Channels stores agents' channel connections, the messages taken from them, their
// conversations' chats and the answers to send.
type Channels struct{ db *mongo.Database }

var _ channels.Repo = Channels{}

// NewChannels returns the channels' repository of db.
func NewChannels(db *mongo.Database) Channels { return Channels{db: db} }

func (r Channels) coll() *mongo.Collection { return r.db.Collection(channelsColl) }

func byConnection(projectID, botID, id string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}}
}

func (r Channels) Insert(ctx context.Context, c channels.Connection) error {
	_, err := r.coll().InsertOne(ctx, c)
	return wrap(err, channels.Resource)
}

func (r Channels) Get(ctx context.Context, projectID, botID, id string) (channels.Connection, error) {
	var c channels.Connection
	err := r.coll().FindOne(ctx, byConnection(projectID, botID, id)).Decode(&c)
	return c, wrap(err, channels.Resource)
}

func (r Channels) Find(ctx context.Context, id string) (channels.Connection, error) {
	var c channels.Connection
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&c)
	return c, wrap(err, channels.Resource)
}

func (r Channels) List(ctx context.Context, projectID, botID string, page paging.Page) ([]channels.Connection, int, error) {
	list := []channels.Connection{}
	total, err := findPageSorted(ctx, r.coll(), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}},
		bson.D{{Key: "created_at", Value: 1}, {Key: "_id", Value: 1}}, page, &list)
	return list, total, wrap(err, channels.Resource)
}

func (r Channels) Replace(ctx context.Context, c channels.Connection) error {
	res, err := r.coll().ReplaceOne(ctx, byConnection(c.ProjectID, c.BotID, c.ID), c)
	if err == nil && res.MatchedCount == 0 {
		return apperr.NotFoundf(channels.Resource)
	}
	return wrap(err, channels.Resource)
}

func (r Channels) Delete(ctx context.Context, projectID, botID, id string) error {
	res, err := r.coll().DeleteOne(ctx, byConnection(projectID, botID, id))
	if err == nil && res.DeletedCount == 0 {
		return apperr.NotFoundf(channels.Resource)
	}
	return wrap(err, channels.Resource)
}

func (r Channels) SetStatus(ctx context.Context, id, status, lastError string, at time.Time) error {
	set := bson.D{{Key: "status", Value: status}, {Key: "updated_at", Value: at}}
	update := bson.D{{Key: "$set", Value: set}}
	if lastError != "" {
		update[0].Value = append(set, bson.E{Key: "last_error", Value: lastError}, bson.E{Key: "last_error_at", Value: at})
	} else {
		update = append(update, bson.E{Key: "$unset", Value: bson.D{{Key: "last_error", Value: ""}, {Key: "last_error_at", Value: ""}}})
	}
	_, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, update)
	return wrap(err, channels.Resource)
}

func (r Channels) Take(ctx context.Context, m channels.Message, ev outbox.Event) (channels.Message, bool, error) {
	err := insertWithEvent(ctx, r.db.Collection(channelMessagesColl), m, ev, channels.MessageResource)
	if apperr.As(err).Kind != apperr.Conflict {
		return m, err == nil, err
	}
	kept, err := r.Message(ctx, m.ID)
	return kept, false, err
}

func (r Channels) Message(ctx context.Context, id string) (channels.Message, error) {
	var m channels.Message
	err := r.db.Collection(channelMessagesColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&m)
	return m, wrap(err, channels.MessageResource)
}

func (r Channels) SetMessage(ctx context.Context, id, status, chatID string) error {
	_, err := r.db.Collection(channelMessagesColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: status}, {Key: "chat_id", Value: chatID}}}})
	return wrap(err, channels.MessageResource)
}

func (r Channels) Thread(ctx context.Context, id string) (channels.Thread, error) {
	var t channels.Thread
	err := r.db.Collection(channelThreadsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&t)
	return t, wrap(err, "channel_thread")
}

func (r Channels) ThreadByChat(ctx context.Context, chatID string) (channels.Thread, error) {
	var t channels.Thread
	err := r.db.Collection(channelThreadsColl).FindOne(ctx, bson.D{{Key: "chat_id", Value: chatID}}).Decode(&t)
	return t, wrap(err, "channel_thread")
}

func (r Channels) PutThread(ctx context.Context, t channels.Thread) error {
	_, err := r.db.Collection(channelThreadsColl).ReplaceOne(ctx, bson.D{{Key: "_id", Value: t.ID}}, t, options.Replace().SetUpsert(true))
	return wrap(err, "channel_thread")
}

func (r Channels) QueueSend(ctx context.Context, s channels.Send) (bool, error) {
	_, err := r.db.Collection(channelSendsColl).InsertOne(ctx, s)
	if err = wrap(err, channels.SendResource); apperr.As(err).Kind == apperr.Conflict {
		return false, nil
	}
	return err == nil, err
}

func (r Channels) Send(ctx context.Context, id string) (channels.Send, error) {
	var s channels.Send
	err := r.db.Collection(channelSendsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&s)
	return s, wrap(err, channels.SendResource)
}

func (r Channels) SetSend(ctx context.Context, s channels.Send, ev outbox.Event) error {
	set := bson.D{{Key: "status", Value: s.Status}, {Key: "error", Value: s.Error}, {Key: "attempts", Value: s.Attempts},
		{Key: "pieces", Value: s.Pieces}, {Key: "updated_at", Value: s.UpdatedAt}}
	if ev.Type != "" {
		set = append(set, bson.E{Key: slot(ev.ID), Value: ev})
	}
	_, err := r.db.Collection(channelSendsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: s.ID}}, bson.D{{Key: "$set", Value: set}})
	return wrap(err, channels.SendResource)
}
