package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/heartbeats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

const (
	heartbeatsColl = "heartbeats"
	firingsColl    = "heartbeat_firings"
)

// Heartbeats stores heartbeats, one document each (its statistics included), and their firings.
type Heartbeats struct{ db *mongo.Database }

var _ heartbeats.Repo = Heartbeats{}

// NewHeartbeats returns the heartbeat repository of db.
func NewHeartbeats(db *mongo.Database) Heartbeats { return Heartbeats{db: db} }

func (r Heartbeats) coll() *mongo.Collection { return r.db.Collection(heartbeatsColl) }

func (r Heartbeats) Insert(ctx context.Context, h heartbeats.Heartbeat) error {
	_, err := r.coll().InsertOne(ctx, h)
	return wrap(err, heartbeats.Resource)
}

func (r Heartbeats) Get(ctx context.Context, projectID, botID, id string) (heartbeats.Heartbeat, error) {
	h, err := r.ByID(ctx, id)
	if err == nil && (h.ProjectID != projectID || h.BotID != botID) {
		return heartbeats.Heartbeat{}, apperr.NotFoundf(heartbeats.Resource)
	}
	return h, err
}

func (r Heartbeats) ByID(ctx context.Context, id string) (heartbeats.Heartbeat, error) {
	var h heartbeats.Heartbeat
	err := r.coll().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&h)
	if err == nil && h.DeletedAt != nil {
		err = mongo.ErrNoDocuments
	}
	return h, wrap(err, heartbeats.Resource)
}

// byAgent matches the live heartbeats of an agent.
func byAgent(projectID, botID string) bson.D {
	return bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}, notDeleted}
}

func (r Heartbeats) List(ctx context.Context, projectID, botID string, page paging.Page) ([]heartbeats.Heartbeat, int, error) {
	list := []heartbeats.Heartbeat{}
	total, err := findPage(ctx, r.coll(), byAgent(projectID, botID), page, &list)
	return list, total, wrap(err, heartbeats.Resource)
}

func (r Heartbeats) All(ctx context.Context, projectID, botID string) ([]heartbeats.Heartbeat, error) {
	return r.find(ctx, byAgent(projectID, botID), options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(heartbeats.MaxPerAgent))
}

func (r Heartbeats) find(ctx context.Context, filter bson.D, opts *options.FindOptionsBuilder) ([]heartbeats.Heartbeat, error) {
	cur, err := r.coll().Find(ctx, filter, opts)
	if err != nil {
		return nil, wrap(err, heartbeats.Resource)
	}
	list := []heartbeats.Heartbeat{}
	return list, wrap(cur.All(ctx, &list), heartbeats.Resource)
}

// Replace writes h over revision h.Rev-1, with evs in its outbox, by one update.
func (r Heartbeats) Replace(ctx context.Context, h heartbeats.Heartbeat, evs ...outbox.Event) error {
	return replaceRevision(ctx, r.coll(), h.UUID, h.Rev, h, heartbeats.Resource, evs...)
}

func (r Heartbeats) Delete(ctx context.Context, h heartbeats.Heartbeat, at time.Time) error {
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: h.UUID}, notDeleted},
		bson.D{{Key: "$set", Value: bson.D{{Key: "deleted_at", Value: at}, {Key: "enabled", Value: false}, {Key: "next_run_at", Value: nil}}}})
	if err != nil {
		return wrap(err, heartbeats.Resource)
	}
	if res.MatchedCount == 0 {
		return apperr.NotFoundf(heartbeats.Resource)
	}
	return nil
}

func (r Heartbeats) Due(ctx context.Context, now time.Time, limit int) ([]heartbeats.Heartbeat, error) {
	return r.find(ctx, bson.D{{Key: "enabled", Value: true}, {Key: "next_run_at", Value: bson.D{{Key: "$lte", Value: now}}}, notDeleted},
		options.Find().SetSort(bson.D{{Key: "next_run_at", Value: 1}}).SetLimit(int64(limit)))
}

func (r Heartbeats) Busy(ctx context.Context, limit int) ([]heartbeats.Heartbeat, error) {
	return r.find(ctx, bson.D{{Key: "running", Value: bson.D{{Key: "$gt", Value: ""}}}}, options.Find().SetLimit(int64(limit)))
}

func (r Heartbeats) Advance(ctx context.Context, id string, slot time.Time, next *time.Time) (bool, error) {
	res, err := r.coll().UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "next_run_at", Value: slot}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "next_run_at", Value: next}}}, {Key: "$inc", Value: bson.D{{Key: "rev", Value: 1}}}})
	if err != nil {
		return false, wrap(err, heartbeats.Resource)
	}
	return res.MatchedCount == 1, nil
}

func (r Heartbeats) InsertFiring(ctx context.Context, f heartbeats.Firing) (heartbeats.Firing, error) {
	_, err := r.db.Collection(firingsColl).InsertOne(ctx, f)
	if mongo.IsDuplicateKeyError(err) {
		return r.Firing(ctx, f.ID)
	}
	return f, wrap(err, heartbeats.FiringResource)
}

func (r Heartbeats) Firing(ctx context.Context, id string) (heartbeats.Firing, error) {
	var f heartbeats.Firing
	err := r.db.Collection(firingsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&f)
	return f, wrap(err, heartbeats.FiringResource)
}

func (r Heartbeats) SetFiring(ctx context.Context, id string, from []string, set map[string]any) (bool, error) {
	fields := make(bson.D, 0, len(set))
	for k, v := range set {
		fields = append(fields, bson.E{Key: k, Value: v})
	}
	res, err := r.db.Collection(firingsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "status", Value: bson.D{{Key: "$in", Value: from}}}},
		bson.D{{Key: "$set", Value: fields}})
	if err != nil {
		return false, wrap(err, heartbeats.FiringResource)
	}
	return res.MatchedCount == 1, nil
}

func (r Heartbeats) Firings(ctx context.Context, projectID, botID, heartbeatID string, page paging.Page) ([]heartbeats.Firing, int, error) {
	filter := bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID}}
	if heartbeatID != "" {
		filter = bson.D{{Key: "heartbeat_id", Value: heartbeatID}}
	}
	list := []heartbeats.Firing{}
	total, err := findPageSorted(ctx, r.db.Collection(firingsColl), filter, bson.D{{Key: "scheduled_at", Value: -1}, {Key: "_id", Value: -1}}, page, &list)
	return list, total, wrap(err, heartbeats.FiringResource)
}
