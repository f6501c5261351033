package store

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/inbox"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

const handoffsColl = "handoffs"

// Handoffs stores the chats' handoffs to people, one document per chat.
type Handoffs struct{ db *mongo.Database }

var _ inbox.Repo = Handoffs{}

// NewHandoffs returns the handoffs' repository of db.
func NewHandoffs(db *mongo.Database) Handoffs { return Handoffs{db: db} }

func (r Handoffs) coll() *mongo.Collection { return r.db.Collection(handoffsColl) }

func (r Handoffs) Get(ctx context.Context, projectID, chatID string) (inbox.Handoff, error) {
	var h inbox.Handoff
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: chatID}, {Key: "project_id", Value: projectID}}).Decode(&h)
	return h, wrap(err, inbox.Resource)
}

// Put inserts the chat's first handoff (rev 0), else sets h's fields on the one at revision
// rev, keeping the events still in its outbox.
func (r Handoffs) Put(ctx context.Context, h inbox.Handoff, rev int64, ev outbox.Event) error {
	h.Rev = rev + 1
	var evs []outbox.Event
	if ev.Type != "" {
		evs = append(evs, ev)
	}
	if rev == 0 {
		doc, err := withEvent(h, evs...)
		if err != nil {
			return err
		}
		_, err = r.coll().InsertOne(ctx, doc)
		if err = wrap(err, inbox.Resource); apperr.As(err).Kind == apperr.Conflict {
			return apperr.New(apperr.Conflict, "handoff_changed", "The handoff changed meanwhile; read it and try again.")
		}
		return err
	}
	update, err := setOf(h, evs...)
	if err != nil {
		return err
	}
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: h.ChatID}, {Key: "rev", Value: rev}}, update)
	if err == nil && res.MatchedCount == 0 {
		return apperr.New(apperr.Conflict, "handoff_changed", "The handoff changed meanwhile; read it and try again.")
	}
	return wrap(err, inbox.Resource)
}

func (r Handoffs) OpenOf(ctx context.Context, projectID, operatorID string) (int, error) {
	n, err := r.coll().CountDocuments(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "operator_id", Value: operatorID},
		{Key: "status", Value: bson.D{{Key: "$in", Value: bson.A{inbox.StatusAssigned, inbox.StatusTaken}}}}})
	return int(n), wrap(err, inbox.Resource)
}

func (r Handoffs) List(ctx context.Context, projectID string, f inbox.Filter, page paging.Page) ([]inbox.Handoff, int, error) {
	filter := bson.D{{Key: "project_id", Value: projectID}}
	for _, kv := range [][2]string{{"bot_id", f.BotID}, {"channel", f.Channel}, {"operator_id", f.OperatorID}, {"source", f.Source}} {
		if kv[1] != "" {
			filter = append(filter, bson.E{Key: kv[0], Value: kv[1]})
		}
	}
	statuses := func(ss ...string) bson.D {
		if f.Status != "" {
			ss = slices.DeleteFunc(ss, func(s string) bool { return s != f.Status })
		}
		return append(slices.Clone(filter), bson.E{Key: "status", Value: bson.D{{Key: "$in", Value: ss}}})
	}
	open, ended := statuses(inbox.StatusWaiting, inbox.StatusAssigned, inbox.StatusTaken), statuses(inbox.StatusReleased, inbox.StatusClosed)
	openCount, err := r.coll().CountDocuments(ctx, open)
	if err != nil {
		return nil, 0, wrap(err, inbox.Resource)
	}
	endedCount, err := r.coll().CountDocuments(ctx, ended)
	if err != nil {
		return nil, 0, wrap(err, inbox.Resource)
	}
	// The open ones, oldest request first, then the ended ones, most recent first.
	list := []inbox.Handoff{}
	skip, limit := page.Skip(), int64(page.PerPage)
	if skip < openCount {
		got, err := r.find(ctx, open, bson.D{{Key: "requested_at", Value: 1}, {Key: "_id", Value: 1}}, skip, limit)
		if err != nil {
			return nil, 0, err
		}
		list = append(list, got...)
	}
	if rest := limit - int64(len(list)); rest > 0 && endedCount > 0 {
		got, err := r.find(ctx, ended, bson.D{{Key: "updated_at", Value: -1}, {Key: "_id", Value: 1}}, max(0, skip-openCount), rest)
		if err != nil {
			return nil, 0, err
		}
		list = append(list, got...)
	}
	return list, int(openCount + endedCount), nil
}

func (r Handoffs) find(ctx context.Context, filter, sort bson.D, skip, limit int64) ([]inbox.Handoff, error) {
	cur, err := r.coll().Find(ctx, filter, options.Find().SetSort(sort).SetSkip(skip).SetLimit(limit))
	if err != nil {
		return nil, wrap(err, inbox.Resource)
	}
	var out []inbox.Handoff
	return out, wrap(cur.All(ctx, &out), inbox.Resource)
}
