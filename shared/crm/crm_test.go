package crm_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/devenv/eventstest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// service is the CRM of a fresh database, its events published to the test NATS server.
func service(t *testing.T) *crm.Service {
	t.Helper()
	s, _ := serviceOn(t)
	return s
}

// serviceOn is service, and its repository.
func serviceOn(t *testing.T) (*crm.Service, crm.Repo) {
	t.Helper()
	db := testenv.Mongo(t)
	if err := store.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	pub, _ := eventstest.Stream(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return crm.NewService(store.NewCRM(db), outbox.NewDispatcher(pub, store.NewOutbox(db), log, func(string) {}), "USD"), store.NewCRM(db)
}

func ptr[T any](v T) *T { return &v }

func value(n int64) flex.OptInt { return flex.OptInt{Set: true, Value: flex.Int(n)} }

// wantError checks err is an apperr of kind about field (when field is not empty).
func wantError(t *testing.T, err error, kind apperr.Kind, field string) {
	t.Helper()
	e := apperr.As(err)
	if err == nil || e.Kind != kind {
		t.Fatalf("error %v, want kind %s", err, kind)
	}
	if field == "" {
		return
	}
	for _, d := range e.Details {
		if d.Field == field {
			return
		}
	}
	t.Fatalf("error %v names %+v, want %s", err, e.Details, field)
}

// A deal is refused with the field at fault: a title, a status of open, won or lost, a value
// from 0, an ISO 4217 currency, a stage of the pipeline, an email that is one.
func TestDealRules(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		in    crm.DealInput
		field string
	}{
		{"NoTitle", crm.DealInput{}, "title"},
		{"BlankTitle", crm.DealInput{Title: ptr("   ")}, "title"},
		{"Status", crm.DealInput{Title: ptr("A"), Status: ptr("pending")}, "status"},
		{"NegativeValue", crm.DealInput{Title: ptr("A"), Value: value(-1)}, "value"},
		{"Currency", crm.DealInput{Title: ptr("A"), Currency: ptr("dollars")}, "currency"},
		{"Stage", crm.DealInput{Title: ptr("A"), Stage: ptr("Nowhere")}, "stage"},
		{"StatusAgainstStage", crm.DealInput{Title: ptr("A"), Status: ptr("lost"), Stage: ptr("Won")}, "status"},
		{"ContactEmail", crm.DealInput{Title: ptr("A"), Contact: &crm.ContactInput{Email: ptr("ada at example")}}, "contact.email"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.CreateDeal(ctx, "p-rules", "bot", tt.in)
			wantError(t, err, apperr.Invalid, tt.field)
		})
	}
	if _, total, err := s.Deals(ctx, "p-rules", "bot", crm.DealQuery{}, paging.Page{Page: 1, PerPage: 10}); err != nil || total != 0 {
		t.Fatalf("refused deals were stored: %d (%v)", total, err)
	}
}

// A deal takes the project's currency unless it names one, starts in the first open stage,
// moves to the won stage when won; an update changes only what it names; another project's
// deal is not found, for reading, changing or deleting.
func TestDealLifecycle(t *testing.T) {
	s := service(t)
	ctx := context.Background()
	d, err := s.CreateDeal(ctx, "p-1", "bot", crm.DealInput{Title: ptr(" Acme "), Value: value(500),
		Contact: &crm.ContactInput{Name: ptr("Ada"), Email: ptr("Ada@Example.com")}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Title != "Acme" || d.Currency != "USD" || d.Value != 500 || d.Stage.Outcome != crm.StatusOpen || d.Contact.Email != "ada@example.com" {
		t.Fatalf("created %+v", d)
	}
	won, err := s.UpdateDeal(ctx, "p-1", "bot", d.UUID, crm.DealInput{Status: ptr("WON")})
	if err != nil {
		t.Fatal(err)
	}
	if won.Stage.Outcome != crm.StatusWon || won.Title != "Acme" || won.Value != 500 || won.Contact.UUID != d.Contact.UUID {
		t.Fatalf("won %+v", won)
	}
	renamed, err := s.UpdateDeal(ctx, "p-1", "bot", d.UUID, crm.DealInput{Title: ptr("Acme Corp"), Currency: ptr("eur")})
	if err != nil || renamed.Title != "Acme Corp" || renamed.Currency != "EUR" || renamed.Value != 500 || renamed.Stage.Outcome != crm.StatusWon {
		t.Fatalf("renamed %+v (%v)", renamed, err)
	}
	// The same email in the project is the same contact, whoever's deal it is.
	again, err := s.CreateDeal(ctx, "p-1", "bot", crm.DealInput{Title: ptr("Acme 2"), Contact: &crm.ContactInput{Email: ptr("ada@example.com")}})
	if err != nil || again.Contact.UUID != d.Contact.UUID {
		t.Fatalf("a second deal with Ada: %+v (%v)", again.Contact, err)
	}

	if _, err := s.Deal(ctx, "p-2", "bot", d.UUID); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("another project's deal read: %v", err)
	}
	if _, err := s.UpdateDeal(ctx, "p-2", "bot", d.UUID, crm.DealInput{Title: ptr("Taken")}); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("another project's deal changed: %v", err)
	}
	if err := s.DeleteDeal(ctx, "p-2", "bot", d.UUID); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("another project's deal deleted: %v", err)
	}
	if got, err := s.Deal(ctx, "p-1", "bot", d.UUID); err != nil || got.Title != "Acme Corp" {
		t.Fatalf("the deal after the other project's tries: %+v (%v)", got, err)
	}
	if err := s.DeleteDeal(ctx, "p-1", "bot", d.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Deal(ctx, "p-1", "bot", d.UUID); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("a deleted deal read: %v", err)
	}
}

// A contact with deals cannot be deleted; one without goes with its notes. Notes need content
// within bounds, default to type note, and list newest first.
func TestContactsAndNotes(t *testing.T) {
	s, repo := serviceOn(t)
	ctx := context.Background()
	c, err := s.CreateContact(ctx, "p-1", "bot", crm.ContactInput{Name: ptr("Grace"), Email: ptr("grace@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		in    crm.NoteInput
		field string
	}{
		{"NoContent", crm.NoteInput{Content: "  "}, "content"},
		{"LongContent", crm.NoteInput{Content: string(make([]byte, crm.MaxNoteLength+1))}, "content"},
		{"LongType", crm.NoteInput{Content: "x", Type: string(make([]byte, crm.MaxNoteTypeLength+1))}, "type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.AddNote(ctx, "p-1", "bot", c.UUID, tt.in)
			wantError(t, err, apperr.Invalid, tt.field)
		})
	}
	first, err := s.AddNote(ctx, "p-1", "bot", c.UUID, crm.NoteInput{Content: "Called; wants a demo."})
	if err != nil || first.Type != crm.DefaultNoteType {
		t.Fatalf("note %+v (%v)", first, err)
	}
	second, err := s.AddNote(ctx, "p-1", "bot", c.UUID, crm.NoteInput{Content: "Demo booked.", Type: "meeting"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNote(ctx, "p-2", "bot", c.UUID, crm.NoteInput{Content: "Not yours."}); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("a note on another project's contact: %v", err)
	}
	detail, err := s.ContactDetail(ctx, "p-1", c.UUID)
	if err != nil || detail.NotesTotal != 2 || detail.Notes[0].UUID != second.UUID || detail.Notes[1].UUID != first.UUID {
		t.Fatalf("detail %+v (%v)", detail, err)
	}

	d, err := s.CreateDeal(ctx, "p-1", "bot", crm.DealInput{Title: ptr("Grace's"), Contact: &crm.ContactInput{Email: ptr("grace@example.com")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteContact(ctx, "p-1", "bot", c.UUID); err != nil {
		t.Fatal(err)
	}
	if kept, err := s.Deal(ctx, "p-1", "bot", d.UUID); err != nil || kept.Contact.UUID != "" || kept.Title != "Grace's" {
		t.Fatalf("the deal of a deleted contact: %+v (%v)", kept, err)
	}
	if _, _, err := s.ContactNotes(ctx, "p-1", c.UUID, paging.Page{Page: 1, PerPage: 10}); apperr.As(err).Kind != apperr.NotFound {
		t.Fatalf("the notes of a deleted contact: %v", err)
	}
	if _, n, err := repo.Notes(ctx, "p-1", c.UUID, paging.Page{Page: 1, PerPage: 10}); err != nil || n != 0 {
		t.Fatalf("%d notes kept after their contact (%v)", n, err)
	}
}
