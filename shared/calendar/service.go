package calendar

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
)

// settingsEvents are the events of an agent's booking settings, about the settings.
var settingsEvents = outbox.Declare[Settings](outbox.CalendarUpdated)

// Resource names calendar settings in outbox references.
const Resource = "calendar"

// Record is an agent's stored settings.
type Record struct {
	BotID     string    `bson:"_id"`
	ProjectID string    `bson:"project_id"`
	Settings  Settings  `bson:"settings"`
	UpdatedAt time.Time `bson:"updated_at"`
}

// Repo persists calendar settings. Get returns an apperr NotFound error when the agent has none.
type Repo interface {
	Get(ctx context.Context, projectID, botID string) (Record, error)
	Put(ctx context.Context, r Record, ev outbox.Event) error
	// InsertBooking stores b with ev in its outbox: a Conflict when its id exists.
	InsertBooking(ctx context.Context, b Booking, ev outbox.Event) error
	Booking(ctx context.Context, projectID, id string) (Booking, error)
	// Bookings lists the agent's bookings that overlap [from, to).
	Bookings(ctx context.Context, projectID, botID string, from, to time.Time) ([]Booking, error)
}

// Service reads and changes agents' calendar settings.
type Service struct {
	repo   Repo
	events *outbox.Dispatcher
	now    func() time.Time
}

// NewService returns the calendar service.
func NewService(repo Repo, events *outbox.Dispatcher) *Service {
	return &Service{repo: repo, events: events, now: time.Now}
}

// Settings returns the agent's settings, Defaults when it has none stored.
func (s *Service) Settings(ctx context.Context, projectID, botID string) (Settings, error) {
	r, err := s.repo.Get(ctx, projectID, botID)
	if err != nil {
		if apperr.IsNotFound(err) {
			return Defaults(), nil
		}
		return Settings{}, err
	}
	return r.Settings, nil
}

// Update merges p into the agent's settings and stores the result.
func (s *Service) Update(ctx context.Context, projectID, botID string, p Patch) (Settings, error) {
	cur, err := s.Settings(ctx, projectID, botID)
	if err != nil {
		return Settings{}, err
	}
	next, err := cur.Apply(p)
	if err != nil {
		return Settings{}, err
	}
	ev := settingsEvents.New(ctx, outbox.CalendarUpdated, projectID, botID, next)
	if err := s.repo.Put(ctx, Record{BotID: botID, ProjectID: projectID, Settings: next, UpdatedAt: s.now().UTC()}, ev); err != nil {
		return Settings{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: botID}, ev)
	return next, nil
}

// Slots lists the agent's free slots between from and to: bookable, and not booked.
func (s *Service) Slots(ctx context.Context, projectID, botID string, from, to time.Time) ([]Slot, error) {
	settings, err := s.Settings(ctx, projectID, botID)
	if err != nil {
		return nil, err
	}
	slots, err := settings.Slots(s.now(), from, to)
	if err != nil || len(slots) == 0 {
		return slots, err
	}
	booked, err := s.repo.Bookings(ctx, projectID, botID, slots[0].Start, slots[len(slots)-1].End)
	if err != nil {
		return nil, err
	}
	return free(slots, booked), nil
}
