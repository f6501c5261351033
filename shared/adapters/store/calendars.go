package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Calendars stores agents' calendar settings, one document per agent.
type Calendars struct{ db *mongo.Database }

var _ calendar.Repo = Calendars{}

// NewCalendars returns the calendar repository of db.
func NewCalendars(db *mongo.Database) Calendars { return Calendars{db: db} }

func (r Calendars) Get(ctx context.Context, projectID, botID string) (calendar.Record, error) {
	var rec calendar.Record
	err := r.db.Collection(calendarsColl).FindOne(ctx, bson.D{{Key: "_id", Value: botID}, {Key: "project_id", Value: projectID}, notDeleted}).Decode(&rec)
	return rec, wrap(err, "calendar")
}

func (r Calendars) Put(ctx context.Context, rec calendar.Record, ev outbox.Event) error {
	update, err := setWithEvent(rec, ev)
	if err != nil {
		return err
	}
	_, err = r.db.Collection(calendarsColl).UpdateOne(ctx, bson.D{{Key: "_id", Value: rec.BotID}, {Key: "project_id", Value: rec.ProjectID}}, update,
		options.UpdateOne().SetUpsert(true))
	return wrap(err, "calendar")
}

func (r Calendars) InsertBooking(ctx context.Context, b calendar.Booking, ev outbox.Event) error {
	return insertWithEvent(ctx, r.db.Collection(bookingsColl), b, ev, calendar.BookingResource)
}

func (r Calendars) Booking(ctx context.Context, projectID, id string) (calendar.Booking, error) {
	var b calendar.Booking
	err := r.db.Collection(bookingsColl).FindOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}).Decode(&b)
	return b, wrap(err, calendar.BookingResource)
}

func (r Calendars) Bookings(ctx context.Context, projectID, botID string, from, to time.Time) ([]calendar.Booking, error) {
	cur, err := r.db.Collection(bookingsColl).Find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "bot_id", Value: botID},
		{Key: "start", Value: bson.D{{Key: "$lt", Value: to}}}, {Key: "end", Value: bson.D{{Key: "$gt", Value: from}}}})
	if err != nil {
		return nil, wrap(err, calendar.BookingResource)
	}
	var out []calendar.Booking
	return out, wrap(cur.All(ctx, &out), calendar.BookingResource)
}
