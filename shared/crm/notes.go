package crm

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Limits of a note.
const (
	MaxNoteLength     = 10000
	MaxNoteTypeLength = 40
	// DefaultNoteType is the type of a note that names none.
	DefaultNoteType = "note"
	// NotesOnContact is how many notes, newest first, a contact read carries; the rest are paged
	// with ContactNotes.
	NotesOnContact = 20
)

// Note is a remark kept on a contact: how a call went, what was agreed, anything worth
// remembering about the person.
type Note struct {
	UUID      string `json:"uuid" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	ContactID string `json:"contact_id" bson:"contact_id"`
	BotID     string `json:"bot_id" bson:"bot_id"`
	Type      string `json:"type" bson:"type"`
	Content   string `json:"content" bson:"content"`
	CreatedAt string `json:"created_at" bson:"created_at"`
}

// NoteInput is a note as a request gives it.
type NoteInput struct {
	Content string `json:"content"`
	Type    string `json:"type"`
}

// ContactDetail is a contact as it is read alone: with its newest notes.
type ContactDetail struct {
	Contact
	Notes      []Note `json:"notes"`
	NotesTotal int    `json:"notes_total"`
}

// AddNote keeps a note on a contact of the project.
func (s *Service) AddNote(ctx context.Context, projectID, botID, contactID string, in NoteInput) (Note, error) {
	n := Note{ProjectID: projectID, BotID: botID, Type: strings.TrimSpace(in.Type), Content: strings.TrimSpace(in.Content)}
	if n.Type == "" {
		n.Type = DefaultNoteType
	}
	var p apperr.Problems
	switch {
	case n.Content == "":
		p.Add("content", "is required")
	case utf8.RuneCountInString(n.Content) > MaxNoteLength:
		p.Add("content", "must be at most %d characters", MaxNoteLength)
	}
	if utf8.RuneCountInString(n.Type) > MaxNoteTypeLength {
		p.Add("type", "must be at most %d characters", MaxNoteTypeLength)
	}
	if err := p.Err(); err != nil {
		return Note{}, err
	}
	c, err := s.repo.Contact(ctx, projectID, strings.TrimSpace(contactID))
	if err != nil {
		return Note{}, err
	}
	n.UUID, n.ContactID, n.CreatedAt = ids.New(), c.UUID, s.now().Format(time.RFC3339Nano)
	return n, s.repo.InsertNote(ctx, n)
}

// ContactNotes returns one page of a contact's notes, newest first.
func (s *Service) ContactNotes(ctx context.Context, projectID, contactID string, page paging.Page) ([]Note, int, error) {
	c, err := s.repo.Contact(ctx, projectID, strings.TrimSpace(contactID))
	if err != nil {
		return nil, 0, err
	}
	return s.repo.Notes(ctx, projectID, c.UUID, page)
}

// ContactDetail returns a contact of the project with its newest notes.
func (s *Service) ContactDetail(ctx context.Context, projectID, contactID string) (ContactDetail, error) {
	c, err := s.repo.Contact(ctx, projectID, strings.TrimSpace(contactID))
	if err != nil {
		return ContactDetail{}, err
	}
	notes, total, err := s.repo.Notes(ctx, projectID, c.UUID, paging.Page{Page: 1, PerPage: NotesOnContact})
	return ContactDetail{Contact: c, Notes: notes, NotesTotal: total}, err
}
