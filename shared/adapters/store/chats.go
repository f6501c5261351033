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

// A chat's messages live in two places. The chat's own document holds its recent messages
// (`recent`, from sequence number `recent_from` on): a turn reads them with the chat and adds
// each message with one write of that document, which also counts it and carries its event.
// Older messages are stored in pages of messagesPerDoc consecutive messages, identified by the
// chat and the page number: when the chat holds more than chats.HistoryTurns+recentSlack recent
// messages, all but the last chats.HistoryTurns move out (pushed onto their pages, then the chat
// written), so the document stays small and still holds a prompt's history. A move repeated
// after a crash pushes a message twice; readers keep one of each number. A chat stored before
// recent messages existed (no recent_from) has all its messages in pages until its next one.
const messagesPerDoc = 50

// recentSlack is how many messages beyond a prompt's history a chat's document holds before they
// move to their pages: one write more every recentSlack messages keeps every write of the chat
// small.
const recentSlack = 10

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

func (r Chats) coll() *mongo.Collection { return r.db.Collection(chatsColl) }

// Start inserts the new chat c holding m, its first message, and ev: one write.
func (r Chats) Start(ctx context.Context, c *chats.Chat, m *chats.Message, ev outbox.Event) (outbox.Ref, error) {
	ms := []chats.Message{*m}
	refs, err := r.StartWith(ctx, c, ms, []outbox.Event{ev})
	if err != nil {
		return outbox.Ref{}, err
	}
	m.Seq = ms[0].Seq
	return refs[0], nil
}

// StartWith inserts the new chat c holding ms, its first messages, each ms[i] with its event
// evs[i] in the document that holds it: the chat's own document when it keeps them all (up to
// chats.HistoryTurns+recentSlack), else its last chats.HistoryTurns, the older ones inserted in
// their pages first. Two writes at most, however many messages (the driver splits an insert
// only past MongoDB's 48 MB a command).
func (r Chats) StartWith(ctx context.Context, c *chats.Chat, ms []chats.Message, evs []outbox.Event) ([]outbox.Ref, error) {
	if len(ms) == 0 || len(evs) != len(ms) {
		return nil, fmt.Errorf("store: a chat starts with at least one message and one event a message, not %d and %d", len(ms), len(evs))
	}
	for i := range ms {
		ms[i].Seq = i + 1
	}
	refs := make([]outbox.Ref, len(ms))
	recent := ms
	if len(ms) > chats.HistoryTurns+recentSlack {
		recent = ms[len(ms)-chats.HistoryTurns:]
		var pages []any
		for start := 0; start < len(ms)-len(recent); {
			page := messagePage{ID: messagePageID(c.UUID, ms[start].Seq), ChatID: c.UUID, ProjectID: c.ProjectID, BotID: c.BotID, Rev: 1}
			var pending []outbox.Event
			for ; start < len(ms)-len(recent) && messagePageID(c.UUID, ms[start].Seq) == page.ID; start++ {
				page.Messages = append(page.Messages, ms[start])
				pending = append(pending, evs[start])
				refs[start] = outbox.Ref{Resource: chats.Resource, ID: page.ID}
			}
			doc, err := withEvent(page, pending...)
			if err != nil {
				return nil, err
			}
			pages = append(pages, doc)
		}
		if _, err := r.db.Collection(chatMessagesColl).InsertMany(ctx, pages); err != nil {
			return nil, wrap(err, chats.Resource)
		}
	}
	last := ms[len(ms)-1]
	c.Messages, c.UpdatedAt, c.Recent, c.RecentFrom, c.Rev = last.Seq, last.CreatedAt, slices.Clone(recent), recent[0].Seq, 1
	for i := len(ms) - len(recent); i < len(ms); i++ {
		refs[i] = outbox.Ref{Resource: chats.RecordResource, ID: c.UUID}
	}
	doc, err := withEvent(c, evs[len(ms)-len(recent):]...)
	if err != nil {
		return nil, err
	}
	_, err = r.coll().InsertOne(ctx, doc)
	return refs, wrap(err, chats.Resource)
}

func (r Chats) Get(ctx context.Context, projectID, botID, id string) (chats.Chat, error) {
	var c chats.Chat
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&c)
	if err == nil && (c.ProjectID != projectID || c.BotID != botID || c.DeletedAt != nil) {
		err = mongo.ErrNoDocuments
	}
	return c, wrap(err, chats.Resource)
}

func (r Chats) List(ctx context.Context, projectID, botID string, page paging.Page) ([]chats.Chat, int, error) {
	list := []chats.Chat{}
	coll := r.coll()
	filter := bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted}
	total, err := coll.CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrap(err, chats.Resource)
	}
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "updated_at", Value: -1}, {Key: "_id", Value: -1}}).
		SetSkip(page.Skip()).SetLimit(int64(page.PerPage)).SetProjection(bson.D{{Key: "recent", Value: 0}, {Key: outbox.Field, Value: 0}}))
	if err != nil {
		return nil, 0, wrap(err, chats.Resource)
	}
	return list, int(total), wrap(cur.All(ctx, &list), chats.Resource)
}

func (r Chats) Delete(ctx context.Context, c chats.Chat, at time.Time) error {
	if _, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: c.UUID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "deleted_at", Value: at}}}, {Key: "$unset", Value: bson.D{{Key: "recent", Value: ""}}}}); err != nil {
		return wrap(err, chats.Resource)
	}
	if _, err := r.db.Collection(chatMessagesColl).DeleteMany(ctx, bson.D{{Key: "chat_id", Value: c.UUID}}); err != nil {
		return wrap(err, chats.Resource)
	}
	_, err := r.db.Collection(handoffsColl).DeleteOne(ctx, bson.D{{Key: "_id", Value: c.UUID}})
	return wrap(err, chats.Resource)
}

// ofRevision selects the live chat id as it was at revision rev (a chat stored before revisions
// were counted has none).
func ofRevision(id string, rev int64) bson.D {
	match := bson.E{Key: "rev", Value: rev}
	if rev == 0 {
		match.Value = bson.D{{Key: "$exists", Value: false}}
	}
	return bson.D{{Key: "_id", Value: id}, match, notDeleted}
}

// Append adds m to c's recent messages, counted, with ev: one write of the chat's document when
// c is as stored (else it reads the chat again and retries), one more when older messages move
// to their pages.
func (r Chats) Append(ctx context.Context, c *chats.Chat, m *chats.Message, ev outbox.Event, published []string) (outbox.Ref, error) {
	ref := outbox.Ref{Resource: chats.RecordResource, ID: c.UUID}
	for attempt := range appendAttempts {
		if attempt > 0 {
			fresh, err := r.Get(ctx, c.ProjectID, c.BotID, c.UUID)
			if err != nil {
				return ref, err
			}
			*c = fresh
		}
		m.Seq = c.Messages + 1
		from := c.RecentFrom
		if from == 0 {
			from = m.Seq
		}
		recent := append(slices.Clip(c.Recent), *m)
		set := bson.D{{Key: "updated_at", Value: m.CreatedAt}, {Key: slot(ev.ID), Value: ev}}
		update := bson.D{{Key: "$inc", Value: bson.D{{Key: "messages", Value: 1}, {Key: "rev", Value: 1}}}}
		if len(recent) > chats.HistoryTurns+recentSlack {
			moved := recent[:len(recent)-chats.HistoryTurns]
			if err := r.movePages(ctx, *c, moved); err != nil {
				return ref, err
			}
			recent = recent[len(moved):]
			from = recent[0].Seq
			set = append(set, bson.E{Key: "recent", Value: recent})
		} else {
			update = append(update, bson.E{Key: "$push", Value: bson.D{{Key: "recent", Value: m}}})
		}
		set = append(set, bson.E{Key: "recent_from", Value: from})
		update = append(update, bson.E{Key: "$set", Value: set})
		if len(published) > 0 {
			unset := make(bson.D, len(published))
			for i, id := range published {
				unset[i] = bson.E{Key: slot(id), Value: ""}
			}
			update = append(update, bson.E{Key: "$unset", Value: unset})
		}
		res, err := r.coll().UpdateOne(ctx, ofRevision(c.UUID, c.Rev), update)
		if err != nil {
			return ref, wrap(err, chats.Resource)
		}
		if res.MatchedCount == 1 {
			c.Messages, c.UpdatedAt, c.Recent, c.RecentFrom, c.Rev = m.Seq, m.CreatedAt, recent, from, c.Rev+1
			return ref, nil
		}
	}
	return ref, busy()
}

// movePages pushes moved, c's oldest recent messages, onto their pages (one write a page, by _id
// alone).
func (r Chats) movePages(ctx context.Context, c chats.Chat, moved []chats.Message) error {
	coll := r.db.Collection(chatMessagesColl)
	for len(moved) > 0 {
		id := messagePageID(c.UUID, moved[0].Seq)
		n := slices.IndexFunc(moved, func(x chats.Message) bool { return messagePageID(c.UUID, x.Seq) != id })
		if n < 0 {
			n = len(moved)
		}
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{
			{Key: "$push", Value: bson.D{{Key: "messages", Value: bson.D{{Key: "$each", Value: moved[:n]}}}}},
			{Key: "$set", Value: bson.D{{Key: "chat_id", Value: c.UUID}, {Key: "project_id", Value: c.ProjectID}, {Key: "bot_id", Value: c.BotID}}},
			{Key: "$inc", Value: bson.D{{Key: "rev", Value: 1}}},
		}, options.UpdateOne().SetUpsert(true)); err != nil {
			return wrap(err, chats.Resource)
		}
		moved = moved[n:]
	}
	return nil
}

// appendAttempts bounds how often Append reads the chat again after another write came first: a
// chat has few writers at once (its user, a run, a workflow), and each attempt lost is one won.
const appendAttempts = 20

func busy() error {
	return apperr.New(apperr.Conflict, "message_busy", "The chat changed while the message was being written; try again.")
}

// Range serves what c's recent messages hold and reads the pages for the rest, keeping one
// message of each number: the last a page holds, as a move repeated (after a crash, or after a
// vote changed the chat meanwhile) pushes the newer copy after the older.
func (r Chats) Range(ctx context.Context, c chats.Chat, from, to int) ([]chats.Message, error) {
	var out []chats.Message
	from = max(from, 1)
	paged := c.Messages
	if c.RecentFrom > 0 {
		paged = c.RecentFrom - 1
		for _, m := range c.Recent {
			if m.Seq >= from && m.Seq <= to {
				out = append(out, m)
			}
		}
	}
	for seq := from; seq <= min(to, paged); seq = (seq-1)/messagesPerDoc*messagesPerDoc + messagesPerDoc + 1 {
		var p messagePage
		err := r.db.Collection(chatMessagesColl).FindOne(ctx, bson.D{{Key: "_id", Value: messagePageID(c.UUID, seq)}}).Decode(&p)
		if err == mongo.ErrNoDocuments {
			continue
		}
		if err != nil {
			return nil, wrap(err, chats.Resource)
		}
		for _, m := range p.Messages {
			if m.Seq >= from && m.Seq <= min(to, paged) {
				out = append(out, m)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b chats.Message) int { return a.Seq - b.Seq })
	kept := out[:0]
	for i, m := range out {
		if i+1 == len(out) || out[i+1].Seq != m.Seq {
			kept = append(kept, m)
		}
	}
	return kept, nil
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

// Message finds the chat whose recent messages hold the message, else the page that does
// (MongoDB answers both from their uuid indexes), and checks its agent.
func (r Chats) Message(ctx context.Context, projectID, botID, id string) (chats.Message, error) {
	var c chats.Chat
	err := r.coll().FindOne(ctx, bson.D{{Key: "recent.uuid", Value: id}, notDeleted}).Decode(&c)
	msgs, project, bot := c.Recent, c.ProjectID, c.BotID
	if errors.Is(err, mongo.ErrNoDocuments) {
		var p messagePage
		err = r.db.Collection(chatMessagesColl).FindOne(ctx, bson.D{{Key: "messages.uuid", Value: id}}).Decode(&p)
		msgs, project, bot = p.Messages, p.ProjectID, p.BotID
	}
	if err == nil && (project != projectID || bot != botID) {
		err = mongo.ErrNoDocuments
	}
	if err != nil {
		return chats.Message{}, wrap(err, chats.MessageResource)
	}
	for _, m := range msgs {
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
	return r.rewrite(ctx, m, ev, func(msgs []chats.Message) []chats.Message {
		for i := range msgs {
			if msgs[i].UUID == m.UUID {
				msgs[i] = m
			}
		}
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
	return r.rewrite(ctx, m, ev, func(msgs []chats.Message) []chats.Message {
		return slices.DeleteFunc(msgs, func(x chats.Message) bool { return x.UUID == m.UUID })
	})
}

// rewrite applies change to the messages of m's chat document or page, whichever holds it (every
// copy of m there), and writes them back, with ev in that document's outbox, if no other write
// came in between (retrying a few times when one did).
func (r Chats) rewrite(ctx context.Context, m chats.Message, ev outbox.Event, change func([]chats.Message) []chats.Message) (outbox.Ref, error) {
	for range 5 {
		var c chats.Chat
		err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: m.ChatID}}).Decode(&c)
		if err == nil && c.DeletedAt != nil {
			err = mongo.ErrNoDocuments
		}
		if err != nil {
			return outbox.Ref{}, wrap(err, chats.MessageResource)
		}
		coll, ref, filter := r.coll(), outbox.Ref{Resource: chats.RecordResource, ID: c.UUID}, ofRevision(c.UUID, c.Rev)
		field, msgs, rev := "recent", c.Recent, c.Rev
		if c.RecentFrom == 0 || m.Seq < c.RecentFrom {
			coll, ref, field = r.db.Collection(chatMessagesColl), outbox.Ref{Resource: chats.Resource, ID: messagePageID(m.ChatID, m.Seq)}, "messages"
			var p messagePage
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: ref.ID}}).Decode(&p); err != nil {
				return ref, wrap(err, chats.MessageResource)
			}
			msgs, rev, filter = p.Messages, p.Rev, bson.D{{Key: "_id", Value: ref.ID}, {Key: "rev", Value: p.Rev}}
		}
		if !slices.ContainsFunc(msgs, func(x chats.Message) bool { return x.UUID == m.UUID }) {
			return ref, wrap(mongo.ErrNoDocuments, chats.MessageResource)
		}
		res, err := coll.UpdateOne(ctx, filter,
			bson.D{{Key: "$set", Value: bson.D{{Key: field, Value: change(msgs)}, {Key: "rev", Value: rev + 1}, {Key: slot(ev.ID), Value: ev}}}})
		if err != nil {
			return ref, wrap(err, chats.MessageResource)
		}
		if res.MatchedCount == 1 {
			return ref, nil
		}
	}
	return outbox.Ref{}, busy()
}
