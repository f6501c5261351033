package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/paging"
)

const (
	chatsColl        = "chats"
	chatMessagesColl = "chat_messages"
)

// Messages are stored in pages of messagesPerDoc consecutive messages of a chat, identified by
// the chat and the page number: a history page or the recent turns of a prompt are one or two
// reads by _id, which every store answers from its primary key.
const messagesPerDoc = 50

// messagePage is one stored page of a chat's messages.
type messagePage struct {
	ID        string          `bson:"_id"`
	ChatID    string          `bson:"chat_id"`
	ProjectID string          `bson:"project_id"`
	BotID     string          `bson:"bot_id"`
	Messages  []chats.Message `bson:"messages"`
}

func messagePageID(chatID string, seq int) string {
	return fmt.Sprintf("%s:%d", chatID, (seq-1)/messagesPerDoc)
}

// Chats stores conversations and their messages.
type Chats struct{ db *mongo.Database }

var _ chats.Repo = Chats{}

// NewChats returns the chat repository of db.
func NewChats(db *mongo.Database) Chats { return Chats{db: db} }

func (r Chats) Create(ctx context.Context, c chats.Chat) error {
	_, err := r.db.Collection(chatsColl).InsertOne(ctx, c)
	return wrap(err, chats.Resource)
}

func (r Chats) Get(ctx context.Context, projectID, botID, id string) (chats.Chat, error) {
	var c chats.Chat
	err := r.db.Collection(chatsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&c)
	if err == nil && (c.ProjectID != projectID || c.BotID != botID || c.DeletedAt != nil) {
		err = mongo.ErrNoDocuments
	}
	return c, wrap(err, chats.Resource)
}

func (r Chats) List(ctx context.Context, projectID, botID string, page paging.Page) ([]chats.Chat, int, error) {
	list := []chats.Chat{}
	total, err := findPageSorted(ctx, r.db.Collection(chatsColl), bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted},
		bson.D{{Key: "updated_at", Value: -1}, {Key: "_id", Value: -1}}, page, &list)
	return list, total, wrap(err, chats.Resource)
}

func (r Chats) Delete(ctx context.Context, c chats.Chat, at time.Time) error {
	if _, err := r.db.Collection(chatsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: c.UUID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "deleted_at", Value: at}}}}); err != nil {
		return wrap(err, chats.Resource)
	}
	_, err := r.db.Collection(chatMessagesColl).DeleteMany(ctx, bson.D{{Key: "chat_id", Value: c.UUID}})
	return wrap(err, chats.Resource)
}

func (r Chats) Append(ctx context.Context, c chats.Chat, m *chats.Message, ev outbox.Event) (outbox.Ref, error) {
	var counted chats.Chat
	err := r.db.Collection(chatsColl).FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: c.UUID}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "messages", Value: 1}}}, {Key: "$set", Value: bson.D{{Key: "updated_at", Value: m.CreatedAt}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&counted)
	if err != nil {
		return outbox.Ref{}, wrap(err, chats.Resource)
	}
	m.Seq = counted.Messages
	ref := outbox.Ref{Resource: chats.Resource, ID: messagePageID(c.UUID, m.Seq)}
	_, err = r.db.Collection(chatMessagesColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: ref.ID}},
		bson.D{
			{Key: "$push", Value: bson.D{{Key: "messages", Value: m}}},
			{Key: "$set", Value: bson.D{{Key: "chat_id", Value: c.UUID}, {Key: "project_id", Value: c.ProjectID}, {Key: "bot_id", Value: c.BotID},
				{Key: slot(ev.ID), Value: ev}}},
		}, options.UpdateOne().SetUpsert(true))
	return ref, wrap(err, chats.Resource)
}

func (r Chats) Range(ctx context.Context, chatID string, from, to int) ([]chats.Message, error) {
	var out []chats.Message
	if from < 1 {
		from = 1
	}
	for seq := from; seq <= to; seq = (seq-1)/messagesPerDoc*messagesPerDoc + messagesPerDoc + 1 {
		var p messagePage
		err := r.db.Collection(chatMessagesColl).FindOne(ctx, bson.D{{Key: "_id", Value: messagePageID(chatID, seq)}}).Decode(&p)
		if err == mongo.ErrNoDocuments {
			continue
		}
		if err != nil {
			return nil, wrap(err, chats.Resource)
		}
		for _, m := range p.Messages {
			if m.Seq >= from && m.Seq <= to {
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b chats.Message) int { return a.Seq - b.Seq })
	return out, nil
}
