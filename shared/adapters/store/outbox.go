package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/agentplane/agentplane/shared/kit/apperr"
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
	"task":         tasksColl,
	// chats.RecordResource: events about a chat itself ("chat" is its message pages)
	"chat_record": chatsColl,
	// events about something deleted: a document of their own, removed once published
	deletedResource: deletedEventsColl,
	"source":        sourcesColl,
	"chat":          chatMessagesColl,
	"heartbeat":     heartbeatsColl,
	// channels.MessageResource and channels.SendResource
	"channel_message": channelMessagesColl,
	"channel_send":    channelSendsColl,
	// inbox.Resource
	"handoff": handoffsColl,
	// email.Resource
	"email": emailsColl,
}

// Outbox finds and removes the events that ride in documents.
type Outbox struct{ db *mongo.Database }

var _ outbox.Store = Outbox{}

// NewOutbox returns the outbox store of db.
func NewOutbox(db *mongo.Database) Outbox { return Outbox{db: db} }

// Pending scans every collection that carries events and returns up to limit events still in
// documents (up to limit of each collection), oldest first.
func (o Outbox) Pending(ctx context.Context, limit int) ([]outbox.Pending, error) {
	var out []outbox.Pending
	for resource, coll := range outboxCollections {
		cur, err := o.db.Collection(coll).Find(ctx,
			bson.D{{Key: outbox.Field, Value: bson.D{{Key: "$exists", Value: true}, {Key: "$ne", Value: bson.D{}}}}},
			options.Find().SetProjection(bson.D{{Key: outbox.Field, Value: 1}}).SetLimit(int64(limit)))
		if err != nil {
			return nil, wrap(err, resource)
		}
		var docs []outboxDoc
		if err := cur.All(ctx, &docs); err != nil {
			return nil, wrap(err, resource)
		}
		for _, d := range docs {
			for _, ev := range d.Events {
				out = append(out, outbox.Pending{Ref: outbox.Ref{Resource: resource, ID: d.ID}, Event: ev})
			}
		}
	}
	sortPending(out)
	return out, nil
}

// sortPending puts events in the order of their changes: event ids are UUIDv7.
func sortPending(out []outbox.Pending) {
	slices.SortFunc(out, func(a, b outbox.Pending) int { return strings.Compare(a.Event.ID, b.Event.ID) })
}

type outboxDoc struct {
	ID     string                  `bson:"_id"`
	Events map[string]outbox.Event `bson:"_outbox"`
}

// The collections of the relay's own records, small whatever the data: marksColl holds a mark
// (keyed by event id) for each event whose inline publish failed, writersColl a record of each
// process that writes events (keyed by its name), asideColl the events that cannot be published.
const (
	marksColl   = "outbox_marks"
	writersColl = "outbox_writers"
	asideColl   = "outbox_aside"
)

type mark struct {
	EventID  string `bson:"_id"`
	Resource string `bson:"resource"`
	Doc      string `bson:"doc"`
}

// Mark tells the relay that eventID in ref is still to be published.
func (o Outbox) Mark(ctx context.Context, ref outbox.Ref, eventID string) error {
	_, err := o.db.Collection(marksColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: eventID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "resource", Value: ref.Resource}, {Key: "doc", Value: ref.ID}}}},
		options.UpdateOne().SetUpsert(true))
	return wrap(err, "outbox")
}

// Marked returns up to limit marked events, reading each one's document by id. A mark whose
// event is no longer in its document (published since) is removed.
func (o Outbox) Marked(ctx context.Context, limit int) ([]outbox.Pending, error) {
	cur, err := o.db.Collection(marksColl).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, wrap(err, "outbox")
	}
	var marks []mark
	if err := cur.All(ctx, &marks); err != nil {
		return nil, wrap(err, "outbox")
	}
	var out []outbox.Pending
	for _, m := range marks {
		coll, ok := outboxCollections[m.Resource]
		if !ok {
			return nil, fmt.Errorf("outbox: unknown resource %q", m.Resource)
		}
		var d outboxDoc
		err := o.db.Collection(coll).FindOne(ctx, bson.D{{Key: "_id", Value: m.Doc}},
			options.FindOne().SetProjection(bson.D{{Key: outbox.Field, Value: 1}})).Decode(&d)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return nil, wrap(err, m.Resource)
		}
		ev, ok := d.Events[m.EventID]
		if !ok {
			if err := o.unmark(ctx, m.EventID); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, outbox.Pending{Ref: outbox.Ref{Resource: m.Resource, ID: m.Doc}, Event: ev, Marked: true})
	}
	sortPending(out)
	return out, nil
}

func (o Outbox) unmark(ctx context.Context, eventID string) error {
	_, err := o.db.Collection(marksColl).DeleteOne(ctx, bson.D{{Key: "_id", Value: eventID}})
	return wrap(err, "outbox")
}

// SetAside keeps an event that cannot be published, with the reason, in the collection
// outbox_aside, and removes it from its document.
func (o Outbox) SetAside(ctx context.Context, p outbox.Pending, reason string) error {
	_, err := o.db.Collection(asideColl).InsertOne(ctx, bson.D{{Key: "_id", Value: p.Event.ID},
		{Key: "resource", Value: p.Ref.Resource}, {Key: "doc", Value: p.Ref.ID}, {Key: "event", Value: p.Event},
		{Key: "reason", Value: reason}, {Key: "at", Value: time.Now().UTC()}})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return wrap(err, "outbox")
	}
	return o.Ack(ctx, []outbox.Pending{{Ref: p.Ref, Event: p.Event, Marked: true}})
}

type writer struct {
	ID     string    `bson:"_id"`
	SeenAt time.Time `bson:"seen_at"`
	Scan   bool      `bson:"scan"`
}

// Beat records that writer is alive; scan asks the relay for a scan.
func (o Outbox) Beat(ctx context.Context, name string, scan bool) error {
	set := bson.D{{Key: "seen_at", Value: time.Now().UTC()}}
	if scan {
		set = append(set, bson.E{Key: "scan", Value: true})
	}
	_, err := o.db.Collection(writersColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: name}},
		bson.D{{Key: "$set", Value: set}}, options.UpdateOne().SetUpsert(true))
	return wrap(err, "outbox")
}

// Leave removes the record of a writer that stopped cleanly.
func (o Outbox) Leave(ctx context.Context, name string) error {
	_, err := o.db.Collection(writersColl).DeleteOne(ctx, bson.D{{Key: "_id", Value: name}})
	return wrap(err, "outbox")
}

// ScanDue removes the records of writers last seen before staleBefore or asking for a scan, and
// reports whether it removed any. A record is removed only as it was read, so a writer's beat
// in between keeps it.
func (o Outbox) ScanDue(ctx context.Context, staleBefore time.Time) (bool, error) {
	cur, err := o.db.Collection(writersColl).Find(ctx, bson.D{})
	if err != nil {
		return false, wrap(err, "outbox")
	}
	var ws []writer
	if err := cur.All(ctx, &ws); err != nil {
		return false, wrap(err, "outbox")
	}
	due := false
	for _, w := range ws {
		if !w.Scan && !w.SeenAt.Before(staleBefore) {
			continue
		}
		res, err := o.db.Collection(writersColl).DeleteOne(ctx, bson.D{{Key: "_id", Value: w.ID}, {Key: "seen_at", Value: w.SeenAt}})
		if err != nil {
			return false, wrap(err, "outbox")
		}
		due = due || res.DeletedCount == 1
	}
	return due, nil
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

// Ack removes published events from their documents (and deletions' event documents), and their
// marks: one command per collection, however many events.
func (o Outbox) Ack(ctx context.Context, ps []outbox.Pending) error {
	// The events of one document are removed by one update of it (a chat started with many
	// messages carries their events together).
	unsets, deletes := map[string]map[string]bson.D{}, map[string][]string{}
	var marks []string
	for _, p := range ps {
		coll, ok := outboxCollections[p.Ref.Resource]
		if !ok {
			return fmt.Errorf("outbox: unknown resource %q", p.Ref.Resource)
		}
		if p.Ref.Resource == deletedResource {
			deletes[coll] = append(deletes[coll], p.Ref.ID)
		} else {
			if unsets[coll] == nil {
				unsets[coll] = map[string]bson.D{}
			}
			unsets[coll][p.Ref.ID] = append(unsets[coll][p.Ref.ID], bson.E{Key: slot(p.Event.ID), Value: ""})
		}
		if p.Marked {
			marks = append(marks, p.Event.ID)
		}
	}
	for coll, docs := range unsets {
		models := make([]mongo.WriteModel, 0, len(docs))
		for id, slots := range docs {
			models = append(models, mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: id}}).SetUpdate(bson.D{{Key: "$unset", Value: slots}}))
		}
		if _, err := o.db.Collection(coll).BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false)); err != nil {
			return wrap(err, "outbox")
		}
	}
	for coll, ids := range deletes {
		if _, err := o.db.Collection(coll).DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}); err != nil {
			return wrap(err, "outbox")
		}
	}
	if len(marks) == 0 {
		return nil
	}
	_, err := o.db.Collection(marksColl).DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: marks}}}})
	return wrap(err, "outbox")
}

// withEvent returns doc as a BSON document carrying evs in its outbox: doc's encoding with the
// outbox appended as its last element, which the driver sends as it is (nothing is encoded twice).
func withEvent(doc any, evs ...outbox.Event) (bson.Raw, error) {
	raw, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	box := make(bson.D, 0, len(evs))
	for _, ev := range evs {
		box = append(box, bson.E{Key: ev.ID, Value: ev})
	}
	boxRaw, err := marshal(box)
	if err != nil {
		return nil, err
	}
	at, out := bsoncore.ReserveLength(make([]byte, 0, len(raw)+len(outbox.Field)+len(boxRaw)+2))
	out = append(out, raw[4:len(raw)-1]...) // doc's elements, without its length and final zero
	out = bsoncore.AppendDocumentElement(out, outbox.Field, boxRaw)
	out = append(out, 0)
	return bson.Raw(bsoncore.UpdateLength(out, at, int32(len(out)-int(at)))), nil
}

// slot is the path of an event in its document's outbox. Events are keyed by id, so adding one
// is a $set and removing one an $unset: plain single-document updates both stores support.
func slot(eventID string) string { return outbox.Field + "." + eventID }

// setWithEvent is the update that sets doc's fields (all but _id) and adds ev to the outbox.
func setWithEvent(doc any, ev outbox.Event) (bson.D, error) {
	return setOf(doc, ev)
}

// setOf is the update that sets doc's fields (all but _id) and adds evs to the outbox.
func setOf(doc any, evs ...outbox.Event) (bson.D, error) {
	d, err := toD(doc)
	if err != nil {
		return nil, err
	}
	set := make(bson.D, 0, len(d)+len(evs))
	for _, e := range d {
		if e.Key != "_id" {
			set = append(set, e)
		}
	}
	for _, ev := range evs {
		set = append(set, bson.E{Key: slot(ev.ID), Value: ev})
	}
	return bson.D{{Key: "$set", Value: set}}, nil
}

// toD is doc encoded, element by element: each element's value stays in its encoding (a
// bson.RawValue), which the driver copies as it is, so the document is not decoded to be
// encoded again.
func toD(doc any) (bson.D, error) {
	raw, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	elems, err := raw.Elements()
	if err != nil {
		return nil, err
	}
	d := make(bson.D, len(elems))
	for i, e := range elems {
		d[i] = bson.E{Key: e.Key(), Value: e.Value()}
	}
	return d, nil
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

// replaceRevision writes doc (with evs in its outbox) over the live document id of revision
// rev-1: optimistic concurrency, a Conflict error when another write came first.
func replaceRevision(ctx context.Context, coll *mongo.Collection, id string, rev int64, doc any, resource string, evs ...outbox.Event) error {
	update, err := setOf(doc, evs...)
	if err != nil {
		return err
	}
	return updateRevision(ctx, coll, id, rev, update, resource)
}

// updateRevision applies update to the live document id of revision rev-1, as replaceRevision.
func updateRevision(ctx context.Context, coll *mongo.Collection, id string, rev int64, update bson.D, resource string) error {
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "rev", Value: rev - 1}, notDeleted}, update)
	if err != nil {
		return wrap(err, resource)
	}
	if res.MatchedCount == 0 {
		return apperr.New(apperr.Conflict, resource+"_changed", "The "+resource+" was changed or deleted by another request; read it and retry.")
	}
	return nil
}
