package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/usermemory"
	"github.com/agentplane/agentplane/shared/workflows"
)

const (
	botsColl      = "bots"
	dealsColl     = "deals"
	contactsColl  = "contacts"
	notesColl     = "contact_notes"
	stagesColl    = "stages"
	workflowsColl = "workflows"
	calendarsColl = "calendars"
	bookingsColl  = "bookings"
)

// ownedByBot are the collections whose documents an agent owns and its deletion tombstones
// (the sweep then purges the chunks of its sources).
var ownedByBot = []string{dealsColl, tasksColl, workflowsColl, calendarsColl, sourcesColl, chatsColl, toolsColl, heartbeatsColl}

// Agents stores agents.
type Agents struct{ db *mongo.Database }

var _ agents.Repo = Agents{}

// NewAgents returns the agent repository of db.
func NewAgents(db *mongo.Database) Agents { return Agents{db: db} }

func (a Agents) Insert(ctx context.Context, b agents.Bot, ev outbox.Event) error {
	return a.taken(ctx, b, insertWithEvent(ctx, a.db.Collection(botsColl), b, ev, "bot"))
}

// byIDOrUUID matches a live document of the project by its id or its uuid.
func byIDOrUUID(projectID, idOrUUID string) bson.D {
	return bson.D{named(idOrUUID), {Key: "project_id", Value: projectID}, notDeleted}
}

// named matches a document by its id or its uuid: by _id alone when idOrUUID has the form of
// the ids minted for it (ids.ObjectID: 24 hex digits), by uuid alone when it has a UUID's, else
// by either. MongoDB answers each from an index; the embedded store reads a filter holding _id
// by its index (its proxy narrows the read to the one document) and any other by reading the
// whole collection.
func named(idOrUUID string) bson.E {
	switch {
	case ids.IsObjectID(idOrUUID):
		return bson.E{Key: "_id", Value: idOrUUID}
	case len(idOrUUID) == 36 && uuid.Validate(idOrUUID) == nil:
		return bson.E{Key: "uuid", Value: idOrUUID}
	}
	return bson.E{Key: "$or", Value: bson.A{bson.D{{Key: "_id", Value: idOrUUID}}, bson.D{{Key: "uuid", Value: idOrUUID}}}}
}

func (a Agents) Get(ctx context.Context, projectID, idOrUUID string) (agents.Bot, error) {
	var b agents.Bot
	err := a.db.Collection(botsColl).FindOne(ctx, byIDOrUUID(projectID, idOrUUID)).Decode(&b)
	return b, wrap(err, "bot")
}

func (a Agents) Find(ctx context.Context, idOrUUID string) (agents.Bot, error) {
	var b agents.Bot
	err := a.db.Collection(botsColl).FindOne(ctx, bson.D{named(idOrUUID), notDeleted}).Decode(&b)
	return b, wrap(err, "bot")
}

func (a Agents) BySubdomain(ctx context.Context, subdomain string) (agents.Bot, error) {
	var b agents.Bot
	err := a.db.Collection(botsColl).FindOne(ctx, bson.D{{Key: "subdomain", Value: subdomain}, notDeleted}).Decode(&b)
	return b, wrap(err, "bot")
}

func (a Agents) ByDomain(ctx context.Context, host string) (agents.Bot, error) {
	var b agents.Bot
	err := a.db.Collection(botsColl).FindOne(ctx, bson.D{{Key: "verified_domain", Value: host}, notDeleted}).Decode(&b)
	return b, wrap(err, "bot")
}

func (a Agents) List(ctx context.Context, projectID string, page paging.Page) ([]agents.Bot, int, error) {
	bots := []agents.Bot{}
	total, err := findPage(ctx, a.db.Collection(botsColl), bson.D{{Key: "project_id", Value: projectID}, notDeleted}, page, &bots)
	return bots, total, wrap(err, "bot")
}

func (a Agents) ScheduledWorkflows(ctx context.Context) ([]agents.Bot, error) {
	cur, err := a.db.Collection(botsColl).Find(ctx, bson.D{{Key: "workflows.trigger_type", Value: workflows.TriggerTypeSchedule},
		{Key: "versioning", Value: true}, notDeleted}, options.Find().SetProjection(bson.D{{Key: "project_id", Value: 1},
		{Key: "versioning", Value: 1}, {Key: "workflows", Value: 1}}))
	if err != nil {
		return nil, wrap(err, "bot")
	}
	var bots []agents.Bot
	return bots, wrap(cur.All(ctx, &bots), "bot")
}

// Replace removes the fields b has not that $set of b leaves as they were (they are omitted when
// empty): the verification fields (absent rather than empty: the unique index of verified domains
// leaves out the agents without one), the canary and the publish gate.
func (a Agents) Replace(ctx context.Context, b agents.Bot, ev outbox.Event) error {
	update, err := setOf(b, ev)
	if err != nil {
		return err
	}
	var unset bson.D
	if b.VerifiedDomain == "" {
		unset = append(unset, bson.E{Key: "verified_domain", Value: ""})
	}
	if b.DomainVerification == nil {
		unset = append(unset, bson.E{Key: "domain_verification", Value: ""})
	}
	if b.Canary == nil {
		unset = append(unset, bson.E{Key: "canary", Value: ""})
	}
	if b.PublishGate == nil {
		unset = append(unset, bson.E{Key: "publish_gate", Value: ""})
	}
	if b.OnlineEval == nil {
		unset = append(unset, bson.E{Key: "online_eval", Value: ""})
	}
	if unset != nil {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	return a.taken(ctx, b, updateRevision(ctx, a.db.Collection(botsColl), b.ID, b.Rev, update, "bot"))
}

// taken names what made err a duplicate of another agent: its subdomain (subdomain_taken) or its
// verified domain (domain_taken). Other errors are err.
func (a Agents) taken(ctx context.Context, b agents.Bot, err error) error {
	if e := apperr.As(err); e.Kind != apperr.Conflict || e.Code != "bot_exists" {
		return err
	}
	n, cerr := a.db.Collection(botsColl).CountDocuments(ctx, bson.D{{Key: "subdomain", Value: b.Subdomain}, {Key: "_id", Value: bson.D{{Key: "$ne", Value: b.ID}}}})
	switch {
	case cerr != nil:
		return wrap(cerr, "bot")
	case n > 0:
		return &apperr.Error{Kind: apperr.Conflict, Code: "subdomain_taken", Message: "subdomain " + b.Subdomain + " is another agent's",
			Details: []apperr.Detail{{Field: "subdomain", Problem: "is another agent's"}}, Err: err}
	case b.VerifiedDomain != "":
		return &apperr.Error{Kind: apperr.Conflict, Code: "domain_taken", Message: "domain " + b.VerifiedDomain + " is another agent's",
			Details: []apperr.Detail{{Field: "domain", Problem: "is another agent's"}}, Err: err}
	}
	return err
}

// Delete removes the agent's live memory list and what it remembers of its end users at once
// (the agent tombstoned last, so a failure leaves it to delete again), and tombstones what it
// owns.
func (a Agents) Delete(ctx context.Context, b agents.Bot, at time.Time, ev outbox.Event) error {
	if _, err := a.db.Collection(memoryLiveColl).DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{b.ID, liveVersionID(b.ID)}}}}}); err != nil {
		return wrap(err, "bot")
	}
	if _, err := a.db.Collection(userMemoriesColl).DeleteMany(ctx, filterOf(usermemory.Query{ProjectID: b.ProjectID, BotID: b.ID})); err != nil {
		return wrap(err, "bot")
	}
	if b.VerifiedDomain != "" {
		// A deleted agent's domain is free for another.
		if _, err := a.db.Collection(botsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: b.ID}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "verified_domain", Value: ""}}}}); err != nil {
			return wrap(err, "bot")
		}
	}
	deleted := bson.D{{Key: "$set", Value: bson.D{{Key: "deleted_at", Value: at}}}}
	for _, coll := range ownedByBot {
		if _, err := a.db.Collection(coll).UpdateMany(ctx, bson.D{{Key: "bot_id", Value: b.ID}, notDeleted}, deleted); err != nil {
			return wrap(err, "bot")
		}
	}
	return tombstone(ctx, a.db.Collection(botsColl), b.ID, at, ev, "bot")
}

// findPage counts the documents matching filter and decodes one page of them, oldest first.
func findPage(ctx context.Context, coll *mongo.Collection, filter bson.D, page paging.Page, out any) (int, error) {
	return findPageSorted(ctx, coll, filter, bson.D{{Key: "_id", Value: 1}}, page, out)
}

// findPageSorted is findPage in the order of sort.
func findPageSorted(ctx context.Context, coll *mongo.Collection, filter, sort bson.D, page paging.Page, out any) (int, error) {
	total, err := coll.CountDocuments(ctx, filter)
	if err != nil {
		return 0, err
	}
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(sort).
		SetSkip(page.Skip()).SetLimit(int64(page.PerPage)))
	if err != nil {
		return 0, err
	}
	return int(total), cur.All(ctx, out)
}
