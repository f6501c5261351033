package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
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
	// Rev counts the writes of the page, so that rewriting a message applies to what was read.
	Rev int64 `bson:"rev"`
}

func messagePageID(chatID string, seq int) string {
	return fmt.Sprintf("%s:%d", chatID, (seq-1)/messagesPerDoc)
}

// Chats stores conversations and their messages.
type Chats struct{ db *mongo.Database }

var _ chats.Repo = Chats{}

// NewChats returns the chat repository of db.
func NewChats(db *mongo.Database) Chats { return Chats{db: db} }

// Start inserts the new chat c already counting m, its first message, and inserts m's page: two
// writes where creating the chat and appending to it would make three.
func (r Chats) Start(ctx context.Context, c chats.Chat, m *chats.Message, ev outbox.Event) (outbox.Ref, error) {
	m.Seq = 1
	c.Messages, c.UpdatedAt = m.Seq, m.CreatedAt
	if _, err := r.db.Collection(chatsColl).InsertOne(ctx, c); err != nil {
		return outbox.Ref{}, wrap(err, chats.Resource)
	}
	ref := outbox.Ref{Resource: chats.Resource, ID: messagePageID(c.UUID, m.Seq)}
	page := messagePage{ID: ref.ID, ChatID: c.UUID, ProjectID: c.ProjectID, BotID: c.BotID, Messages: []chats.Message{*m}, Rev: 1}
	return ref, insertWithEvent(ctx, r.db.Collection(chatMessagesColl), page, ev, chats.Resource)
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
			{Key: "$inc", Value: bson.D{{Key: "rev", Value: 1}}},
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

func (r Chats) SetPlan(ctx context.Context, chatID string, p *chats.Plan) error {
	update := bson.D{{Key: "$unset", Value: bson.D{{Key: "plan", Value: ""}}}}
	if p != nil {
		update = bson.D{{Key: "$set", Value: bson.D{{Key: "plan", Value: p}}}}
	}
	_, err := r.db.Collection(chatsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: chatID}}, update)
	return wrap(err, chats.Resource)
}

func (r Chats) SetChat(ctx context.Context, chatID string, set map[string]any, ev outbox.Event) error {
	fields := bson.D{{Key: slot(ev.ID), Value: ev}}
	for k, v := range set {
		fields = append(fields, bson.E{Key: k, Value: v})
	}
	_, err := r.db.Collection(chatsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: chatID}}, bson.D{{Key: "$set", Value: fields}})
	return wrap(err, chats.Resource)
}

// Message finds the page holding the message (MongoDB answers from the messages.uuid index)
// and checks its agent.
func (r Chats) Message(ctx context.Context, projectID, botID, id string) (chats.Message, error) {
	var p messagePage
	err := r.db.Collection(chatMessagesColl).FindOne(ctx, bson.D{{Key: "messages.uuid", Value: id}}).Decode(&p)
	if err == nil && (p.ProjectID != projectID || p.BotID != botID) {
		err = mongo.ErrNoDocuments
	}
	if err != nil {
		return chats.Message{}, wrap(err, chats.MessageResource)
	}
	for _, m := range p.Messages {
		if m.UUID == id {
			return m, nil
		}
	}
	return chats.Message{}, wrap(mongo.ErrNoDocuments, chats.MessageResource)
}

// votesColl keeps one document per message and voter.
const votesColl = "chat_votes"

func (r Chats) Tally(ctx context.Context, m chats.Message, voter, vote string) (int, int, error) {
	coll := r.db.Collection(votesColl)
	id := m.UUID + "|" + voter
	var err error
	if vote == "" {
		_, err = coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	} else {
		_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "message_id", Value: m.UUID}, {Key: "vote", Value: vote}}}}, options.UpdateOne().SetUpsert(true))
	}
	if err != nil {
		return 0, 0, wrap(err, chats.MessageResource)
	}
	up, err := coll.CountDocuments(ctx, bson.D{{Key: "message_id", Value: m.UUID}, {Key: "vote", Value: chats.VoteUp}})
	if err != nil {
		return 0, 0, wrap(err, chats.MessageResource)
	}
	down, err := coll.CountDocuments(ctx, bson.D{{Key: "message_id", Value: m.UUID}, {Key: "vote", Value: chats.VoteDown}})
	if err != nil {
		return 0, 0, wrap(err, chats.MessageResource)
	}
	return int(up), int(down), nil
}

func (r Chats) UpdateMessage(ctx context.Context, m chats.Message, ev outbox.Event) (outbox.Ref, error) {
	return r.rewrite(ctx, m, ev, func(msgs []chats.Message, i int) []chats.Message {
		msgs[i] = m
		return msgs
	})
}

func (r Chats) VoteOf(ctx context.Context, messageID, voter string) (string, error) {
	var v struct {
		Vote string `bson:"vote"`
	}
	err := r.db.Collection(votesColl).FindOne(ctx, bson.D{{Key: "_id", Value: messageID + "|" + voter}}).Decode(&v)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", nil
	}
	return v.Vote, wrap(err, chats.MessageResource)
}

func (r Chats) DeleteMessage(ctx context.Context, m chats.Message, ev outbox.Event) (outbox.Ref, error) {
	return r.rewrite(ctx, m, ev, func(msgs []chats.Message, i int) []chats.Message { return slices.Delete(msgs, i, i+1) })
}

// rewrite applies change to the messages of m's page and writes them back, with ev in the
// page's outbox, if no other write came in between (retrying a few times when one did).
func (r Chats) rewrite(ctx context.Context, m chats.Message, ev outbox.Event, change func([]chats.Message, int) []chats.Message) (outbox.Ref, error) {
	coll := r.db.Collection(chatMessagesColl)
	ref := outbox.Ref{Resource: chats.Resource, ID: messagePageID(m.ChatID, m.Seq)}
	for range 5 {
		var p messagePage
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: ref.ID}}).Decode(&p); err != nil {
			return ref, wrap(err, chats.MessageResource)
		}
		i := slices.IndexFunc(p.Messages, func(x chats.Message) bool { return x.UUID == m.UUID })
		if i < 0 {
			return ref, wrap(mongo.ErrNoDocuments, chats.MessageResource)
		}
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: ref.ID}, {Key: "rev", Value: p.Rev}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "messages", Value: change(p.Messages, i)}, {Key: "rev", Value: p.Rev + 1}, {Key: slot(ev.ID), Value: ev}}}})
		if err != nil {
			return ref, wrap(err, chats.MessageResource)
		}
		if res.MatchedCount == 1 {
			return ref, nil
		}
	}
	return ref, apperr.New(apperr.Conflict, "message_busy", "The chat changed while the message was being updated; try again.")
}
