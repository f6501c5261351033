package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
)

// outboxCollections maps each resource that carries events to its collection.
var outboxCollections = map[string]string{
	"bot":      botsColl,
	"deal":     dealsColl,
	"workflow": workflowsColl,
	"calendar": calendarsColl,
	"booking":  bookingsColl,
	// workflows.RunResource
	"workflow_run": workflowRunsColl,
	"contact":      contactsColl,
	"pipeline":     pipelinesColl,
	"stage":        stagesColl,
	// chats.RecordResource: events about a chat itself ("chat" is its message pages)
	"chat_record": chatsColl,
	// events about something deleted: a document of their own, removed once published
	deletedResource: deletedEventsColl,
	"source":        sourcesColl,
	"chat":          chatMessagesColl,
}

// Outbox finds and removes the events that ride in documents.
type Outbox struct{ db *mongo.Database }

var _ outbox.Store = Outbox{}

// NewOutbox returns the outbox store of db.
func NewOutbox(db *mongo.Database) Outbox { return Outbox{db: db} }

// Pending returns up to limit events still in documents.
func (o Outbox) Pending(ctx context.Context, limit int) ([]outbox.Pending, error) {
	var out []outbox.Pending
	for resource, coll := range outboxCollections {
		cur, err := o.db.Collection(coll).Find(ctx,
			bson.D{{Key: outbox.Field, Value: bson.D{{Key: "$exists", Value: true}, {Key: "$ne", Value: bson.D{}}}}},
			options.Find().SetProjection(bson.D{{Key: outbox.Field, Value: 1}}).SetLimit(int64(limit)))
		if err != nil {
			return nil, wrap(err, resource)
		}
		var docs []struct {
			ID     string                  `bson:"_id"`
			Events map[string]outbox.Event `bson:"_outbox"`
		}
		if err := cur.All(ctx, &docs); err != nil {
			return nil, wrap(err, resource)
		}
		for _, d := range docs {
			for _, ev := range d.Events {
				out = append(out, outbox.Pending{Ref: outbox.Ref{Resource: resource, ID: d.ID}, Event: ev})
			}
		}
	}
	// Event ids are UUIDv7: their order is the order of the changes.
	slices.SortFunc(out, func(a, b outbox.Pending) int { return strings.Compare(a.Event.ID, b.Event.ID) })
	return out, nil
}

// deletedResource and deletedEventsColl keep the events of hard deletions, whose documents are
// gone: each event is a document of its own, written before the deletion and removed once
// published.
const (
	deletedResource   = "deleted"
	deletedEventsColl = "deleted_events"
)

// deleteWithEvent keeps ev in a document of its own, then deletes what filter matches in coll.
// A crash between the two leaves an event of a deletion that did not happen, which the relay
// publishes: consumers see the deletion of something still there once (at least once).
func deleteWithEvent(ctx context.Context, db *mongo.Database, coll *mongo.Collection, filter bson.D, ev outbox.Event) (outbox.Ref, error) {
	ref := outbox.Ref{Resource: deletedResource, ID: ev.ID}
	if err := insertWithEvent(ctx, db.Collection(deletedEventsColl), bson.D{{Key: "_id", Value: ev.ID}}, ev, deletedResource); err != nil {
		return ref, err
	}
	_, err := coll.DeleteOne(ctx, filter)
	return ref, wrap(err, deletedResource)
}

// Ack removes a published event from its document (and a deletion's event document).
func (o Outbox) Ack(ctx context.Context, ref outbox.Ref, eventID string) error {
	coll, ok := outboxCollections[ref.Resource]
	if !ok {
		return fmt.Errorf("outbox: unknown resource %q", ref.Resource)
	}
	if ref.Resource == deletedResource {
		_, err := o.db.Collection(coll).DeleteOne(ctx, bson.D{{Key: "_id", Value: ref.ID}})
		return wrap(err, ref.Resource)
	}
	_, err := o.db.Collection(coll).UpdateOne(ctx, bson.D{{Key: "_id", Value: ref.ID}},
		bson.D{{Key: "$unset", Value: bson.D{{Key: slot(eventID), Value: ""}}}})
	return wrap(err, ref.Resource)
}

// withEvent returns doc as a BSON document carrying ev in its outbox.
func withEvent(doc any, ev outbox.Event) (bson.D, error) {
	d, err := toD(doc)
	if err != nil {
		return nil, err
	}
	return append(d, bson.E{Key: outbox.Field, Value: bson.D{{Key: ev.ID, Value: ev}}}), nil
}

// slot is the path of an event in its document's outbox. Events are keyed by id, so adding one
// is a $set and removing one an $unset: plain single-document updates both stores support.
func slot(eventID string) string { return outbox.Field + "." + eventID }

// setWithEvent is the update that sets doc's fields (all but _id) and adds ev to the outbox.
func setWithEvent(doc any, ev outbox.Event) (bson.D, error) {
	return setOf(doc, &ev)
}

// setOf is the update that sets doc's fields (all but _id), and adds ev to the outbox when it
// is not nil.
func setOf(doc any, ev *outbox.Event) (bson.D, error) {
	d, err := toD(doc)
	if err != nil {
		return nil, err
	}
	set := make(bson.D, 0, len(d)+1)
	for _, e := range d {
		if e.Key != "_id" {
			set = append(set, e)
		}
	}
	if ev != nil {
		set = append(set, bson.E{Key: slot(ev.ID), Value: *ev})
	}
	return bson.D{{Key: "$set", Value: set}}, nil
}

func toD(doc any) (bson.D, error) {
	raw, err := bson.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var d bson.D
	return d, bson.Unmarshal(raw, &d)
}

// notDeleted matches documents that are not tombstoned.
var notDeleted = bson.E{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: false}}}

// insertWithEvent inserts doc carrying ev in its outbox.
func insertWithEvent(ctx context.Context, coll *mongo.Collection, doc any, ev outbox.Event, resource string) error {
	d, err := withEvent(doc, ev)
	if err != nil {
		return err
	}
	_, err = coll.InsertOne(ctx, d)
	return wrap(err, resource)
}

// replaceRevision writes doc (with ev in its outbox) over the live document id of revision
// rev-1: optimistic concurrency, a Conflict error when another write came first.
func replaceRevision(ctx context.Context, coll *mongo.Collection, id string, rev int64, doc any, ev outbox.Event, resource string) error {
	update, err := setWithEvent(doc, ev)
	if err != nil {
		return err
	}
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "rev", Value: rev - 1}, notDeleted}, update)
	if err != nil {
		return wrap(err, resource)
	}
	if res.MatchedCount == 0 {
		return apperr.New(apperr.Conflict, resource+"_changed", "The "+resource+" was changed or deleted by another request; read it and retry.")
	}
	return nil
}
