package calendar

import (
	"context"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
)

// bookingEvents are the events of bookings, about the booking.
var bookingEvents = outbox.Declare[Booking](outbox.BookingCreated)

// BookingResource names bookings in errors and outbox references.
const BookingResource = "booking"

// Bounds of a booking's fields.
const (
	MaxBookingNameLength  = 200
	MaxBookingNotesLength = 2000
)

// bookingNamespace derives a booking's id from its agent and slot, so a slot is booked once.
var bookingNamespace = uuid.MustParse("0b5e3f2a-8c41-4d7e-b6a9-3e2f1c0d9a87")

// Booking is a meeting booked in one of an agent's slots.
type Booking struct {
	UUID      string    `json:"uuid" bson:"_id"`
	ProjectID string    `json:"-" bson:"project_id"`
	BotID     string    `json:"-" bson:"bot_id"`
	Title     string    `json:"title" bson:"title"`
	Location  string    `json:"location" bson:"location"`
	Start     time.Time `json:"start" bson:"start"`
	End       time.Time `json:"end" bson:"end"`
	Name      string    `json:"name" bson:"name"`
	Email     string    `json:"email" bson:"email"`
	Notes     string    `json:"notes" bson:"notes"`
	// Key is the idempotency key of the request that made the booking.
	Key       string    `json:"-" bson:"key"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
}

// BookingInput asks for a booking: the start of a free slot (RFC 3339) and who is meeting.
type BookingInput struct {
	Start string `json:"start"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Notes string `json:"notes"`
}

func (in *BookingInput) check() (time.Time, error) {
	var p apperr.Problems
	start, err := time.Parse(time.RFC3339, strings.TrimSpace(in.Start))
	if err != nil {
		p.Add("start", "must be an RFC 3339 time such as 2026-12-01T09:00:00Z")
	}
	in.Name, in.Email, in.Notes = strings.TrimSpace(in.Name), strings.TrimSpace(in.Email), strings.TrimSpace(in.Notes)
	switch {
	case in.Name == "":
		p.Add("name", "is required")
	case utf8.RuneCountInString(in.Name) > MaxBookingNameLength:
		p.Add("name", "must be at most %d characters", MaxBookingNameLength)
	}
	if a, err := mail.ParseAddress(in.Email); err != nil || a.Address != in.Email {
		p.Add("email", "must be an email address")
	}
	if utf8.RuneCountInString(in.Notes) > MaxBookingNotesLength {
		p.Add("notes", "must be at most %d characters", MaxBookingNotesLength)
	}
	return start, p.Err()
}

// Book books the free slot starting at in.Start for the agent, emitting booking.created. key
// makes the call idempotent: booking again with the same key returns the booking already made,
// while a slot booked under another key is a Conflict (slot_taken).
func (s *Service) Book(ctx context.Context, projectID, botID string, in BookingInput, key string) (Booking, error) {
	start, err := in.check()
	if err != nil {
		return Booking{}, err
	}
	id := uuid.NewSHA1(bookingNamespace, []byte(projectID+"/"+botID+"/"+start.UTC().Format(time.RFC3339))).String()
	if b, err := s.repo.Booking(ctx, projectID, id); err == nil {
		if b.Key == key && key != "" {
			return b, nil
		}
		return Booking{}, slotTaken()
	} else if !apperr.IsNotFound(err) {
		return Booking{}, err
	}
	settings, err := s.Settings(ctx, projectID, botID)
	if err != nil {
		return Booking{}, err
	}
	if !settings.IsEnabled {
		return Booking{}, apperr.New(apperr.Conflict, "calendar_disabled", "The agent's calendar is not enabled for bookings.")
	}
	// Slots lists the slots lying wholly in the range: the range is the one slot's length.
	slots, err := s.Slots(ctx, projectID, botID, start, start.Add(time.Duration(settings.SlotDurationMinutes)*time.Minute))
	if err != nil {
		return Booking{}, err
	}
	if len(slots) == 0 || !slots[0].Start.Equal(start) {
		return Booking{}, apperr.Invalidf("start", "is not the start of a free slot; check the availability first")
	}
	b := Booking{UUID: id, ProjectID: projectID, BotID: botID, Title: settings.MeetingTitle, Location: settings.MeetingLocation,
		Start: slots[0].Start, End: slots[0].End, Name: in.Name, Email: in.Email, Notes: in.Notes, Key: key,
		CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	ev := bookingEvents.New(ctx, outbox.BookingCreated, projectID, botID, b)
	if err := s.repo.InsertBooking(ctx, b, ev); err != nil {
		if apperr.As(err).Kind == apperr.Conflict {
			return Booking{}, slotTaken()
		}
		return Booking{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: BookingResource, ID: b.UUID}, ev)
	return b, nil
}

func slotTaken() error {
	return apperr.New(apperr.Conflict, "slot_taken", "That slot is already booked; choose another free slot.")
}

// free drops the slots that overlap a booking.
func free(slots []Slot, booked []Booking) []Slot {
	if len(booked) == 0 {
		return slots
	}
	out := slots[:0]
	for _, sl := range slots {
		taken := false
		for _, b := range booked {
			if sl.Start.Before(b.End) && b.Start.Before(sl.End) {
				taken = true
				break
			}
		}
		if !taken {
			out = append(out, sl)
		}
	}
	return out
}
