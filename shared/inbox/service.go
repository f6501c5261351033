package inbox

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Bounds of what a handoff holds.
const (
	MaxReason = 500
	MaxNote   = 4000
	MaxNotes  = 200
)

var handoffEvents = outbox.Declare[Handoff](outbox.HandoffRequested, outbox.HandoffAssigned, outbox.HandoffTaken,
	outbox.HandoffReleased, outbox.HandoffClosed)

// Services are what the inbox acts through.
type Services struct {
	Chats *chats.Service
	// Operators tells whether the account's operator may answer the project's chats: NotFound
	// when it is no such operator.
	Operators func(ctx context.Context, accountID, projectID, operatorID string) error
	// Online lists the account's operators of the project who are online, and how many chats
	// each may have open at once, for assignments that name no one.
	Online func(ctx context.Context, accountID, projectID string) ([]Seat, error)
	// Deliver sends a person's reply to where the end user is, when the chat is a channel's
	// conversation, once per key; nil when it is not one.
	Deliver func(ctx context.Context, projectID, botID, chatID, text, key string) error
}

// Seat is an operator who may be given chats: its id and how many it may have open at once.
type Seat struct {
	OperatorID string
	MaxOpen    int
}

// Service is the inbox of a deployment's handoffs.
type Service struct {
	repo   Repo
	events *outbox.Dispatcher
	svc    Services
	now    func() time.Time
}

// NewService returns the inbox over repo.
func NewService(repo Repo, events *outbox.Dispatcher, svc Services) *Service {
	return &Service{repo: repo, events: events, svc: svc, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Actor is who acts in the inbox: an operator (OperatorID, with their Name), or the account
// through its API key.
type Actor struct {
	AccountID, OperatorID, Name string
}

// by is the actor as a note or a reply names them.
func (a Actor) by() string { return cmp.Or(a.OperatorID, "account") }

// Request is what asks for a person: its source, the reason, the urgency, where the end user
// writes.
type Request struct {
	Source, Reason, Urgency, Channel string
}

// Request flags the chat of the project's agent for a person, once: a chat whose handoff is
// open (waiting, assigned or taken) stays as it is, and new reports false.
func (s *Service) Request(ctx context.Context, projectID, botID, chatID string, r Request) (h Handoff, created bool, err error) {
	var p apperr.Problems
	r.Reason = strings.TrimSpace(r.Reason)
	if utf8.RuneCountInString(r.Reason) > MaxReason {
		r.Reason = string([]rune(r.Reason)[:MaxReason])
	}
	r.Urgency = cmp.Or(strings.ToLower(strings.TrimSpace(r.Urgency)), "normal")
	if !slices.Contains(Urgencies, r.Urgency) {
		p.Add("urgency", "must be one of %s", strings.Join(Urgencies, ", "))
	}
	if err := p.Err(); err != nil {
		return Handoff{}, false, err
	}
	if _, err := s.svc.Chats.Get(ctx, projectID, botID, chatID); err != nil {
		return Handoff{}, false, err
	}
	old, err := s.repo.Get(ctx, projectID, chatID)
	switch {
	case err == nil && old.Open():
		return old, false, nil
	case err != nil && !apperr.IsNotFound(err):
		return Handoff{}, false, err
	}
	now := s.now()
	h = Handoff{ChatID: chatID, ProjectID: projectID, BotID: botID, Status: StatusWaiting, Source: r.Source, Reason: r.Reason,
		Urgency: r.Urgency, Channel: cmp.Or(r.Channel, "api"), Notes: []Note{}, RequestedAt: now, UpdatedAt: now}
	if err := s.put(ctx, h, old.Rev, outbox.HandoffRequested); err != nil {
		if apperr.As(err).Kind == apperr.Conflict {
			// Asked twice at once: the other request flagged it.
			h, err = s.repo.Get(ctx, projectID, chatID)
			return h, false, err
		}
		return Handoff{}, false, err
	}
	return h, true, nil
}

// put writes h over revision rev, with the event typ about it.
func (s *Service) put(ctx context.Context, h Handoff, rev int64, typ string) error {
	h.Rev = rev + 1
	ev := handoffEvents.New(ctx, typ, h.ProjectID, h.BotID, h)
	if err := s.repo.Put(ctx, h, rev, ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: h.ChatID}, ev)
	return nil
}

// List returns a page of the project's handoffs that f selects: the open ones first, the
// oldest request first, then the released and closed, the most recent first.
func (s *Service) List(ctx context.Context, projectID string, f Filter, page paging.Page) ([]Handoff, int, error) {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, 0, apperr.Invalidf("status", "must be one of %s", strings.Join(Statuses, ", "))
	}
	return s.repo.List(ctx, projectID, f, page)
}

// Of returns the handoff of the chat of the project's agent: NotFound when the chat has none,
// or is another agent's.
func (s *Service) Of(ctx context.Context, projectID, botID, chatID string) (Handoff, error) {
	return s.get(ctx, projectID, botID, chatID)
}

// get is Of.
func (s *Service) get(ctx context.Context, projectID, botID, chatID string) (Handoff, error) {
	h, err := s.repo.Get(ctx, projectID, chatID)
	if err == nil && h.BotID != botID {
		err = apperr.NotFoundf(Resource)
	}
	return h, err
}

// operator is the operator an actor acts as or for: named, else the actor themselves; one the
// account has for the project.
func (s *Service) operator(ctx context.Context, projectID string, a Actor, named string) (string, error) {
	id := cmp.Or(strings.TrimSpace(named), a.OperatorID)
	if id == "" {
		return "", apperr.Invalidf("operator_id", "is required with an API key: the operator to act for")
	}
	err := s.svc.Operators(ctx, a.AccountID, projectID, id)
	if apperr.IsNotFound(err) && (a.OperatorID == "" || id == a.OperatorID) {
		return "", apperr.Invalidf("operator_id", "is no operator of this project")
	}
	// An operator may also hand a chat to a colleague of its projects: one of no project of
	// theirs is not found.
	return id, err
}

// Assign gives the chat's open handoff to an operator (operatorID, else the actor). Of two
// changes at once, one wins and the other is a Conflict.
func (s *Service) Assign(ctx context.Context, projectID, botID, chatID string, a Actor, operatorID string) (Handoff, error) {
	var id string
	var err error
	if strings.TrimSpace(operatorID) == "" && a.OperatorID == "" {
		id, err = s.next(ctx, projectID, a)
	} else {
		id, err = s.operator(ctx, projectID, a, operatorID)
	}
	if err != nil {
		return Handoff{}, err
	}
	h, err := s.get(ctx, projectID, botID, chatID)
	if err != nil {
		return Handoff{}, err
	}
	switch {
	case !h.Open():
		return Handoff{}, apperr.New(apperr.Conflict, "handoff_not_open", "This chat waits for no one: it was handed back or closed.")
	case h.Status == StatusTaken && h.OperatorID != id:
		return Handoff{}, apperr.New(apperr.Conflict, "handoff_taken", "Another operator has taken this chat over.")
	case h.Status == StatusAssigned && a.OperatorID != "" && h.OperatorID != a.OperatorID:
		// An operator hands on only what is theirs; the account reassigns anything.
		return Handoff{}, apperr.New(apperr.Conflict, "handoff_assigned", "This chat is assigned to another operator.")
	}
	rev, now := h.Rev, s.now()
	h.OperatorID, h.AssignedAt, h.UpdatedAt = id, &now, now
	if h.Status == StatusWaiting {
		h.Status = StatusAssigned
	}
	return h, s.put(ctx, h, rev, outbox.HandoffAssigned)
}

// next is the operator an assignment naming no one goes to: of the project's online operators
// below their max_open, the one with the fewest chats open (the first listed of equals).
func (s *Service) next(ctx context.Context, projectID string, a Actor) (string, error) {
	seats, err := s.svc.Online(ctx, a.AccountID, projectID)
	if err != nil {
		return "", err
	}
	best, least := "", 0
	for _, seat := range seats {
		n, err := s.repo.OpenOf(ctx, projectID, seat.OperatorID)
		if err != nil {
			return "", err
		}
		if n < seat.MaxOpen && (best == "" || n < least) {
			best, least = seat.OperatorID, n
		}
	}
	if best == "" {
		return "", apperr.New(apperr.Conflict, "no_operator_available", "No operator of this project is online with room for another chat; name one with operator_id.")
	}
	return best, nil
}

// Take takes the chat of the project's agent over for an operator (operatorID, else the
// actor): the agent answers none of its messages until it is handed back; what the end user
// writes meanwhile is kept. A chat nobody flagged is taken all the same (source operator).
func (s *Service) Take(ctx context.Context, projectID string, bot agents.Bot, chatID string, a Actor, operatorID string) (Handoff, error) {
	id, err := s.operator(ctx, projectID, a, operatorID)
	if err != nil {
		return Handoff{}, err
	}
	if _, err := s.svc.Chats.Get(ctx, projectID, bot.ID, chatID); err != nil {
		return Handoff{}, err
	}
	h, err := s.repo.Get(ctx, projectID, chatID)
	now := s.now()
	switch {
	case apperr.IsNotFound(err) || (err == nil && !h.Open()):
		h = Handoff{ChatID: chatID, ProjectID: projectID, BotID: bot.ID, Source: SourceOperator, Urgency: "normal", Channel: "api",
			Notes: []Note{}, RequestedAt: now, Rev: h.Rev}
	case err != nil:
		return Handoff{}, err
	case h.Status == StatusTaken && h.OperatorID != id:
		return Handoff{}, apperr.New(apperr.Conflict, "handoff_taken", "Another operator has taken this chat over.")
	}
	rev := h.Rev
	if h.AssignedAt == nil || h.OperatorID != id {
		h.AssignedAt = &now
	}
	h.Status, h.OperatorID, h.TakenAt, h.UpdatedAt = StatusTaken, id, &now, now
	if err := s.put(ctx, h, rev, outbox.HandoffTaken); err != nil {
		return Handoff{}, err
	}
	return h, s.svc.Chats.Hold(ctx, projectID, bot.ID, chatID, true, "")
}

// Reply answers the end user as the operator who took the chat over: a message of the chat in
// the agent's place, signed with the operator's name, delivered to where the end user is.
func (s *Service) Reply(ctx context.Context, projectID string, bot agents.Bot, chatID string, a Actor, text string) (chats.Message, error) {
	text = strings.TrimSpace(text)
	if text == "" || utf8.RuneCountInString(text) > chats.MaxMessageLength {
		return chats.Message{}, apperr.Invalidf("content", "must be 1 to %d characters", chats.MaxMessageLength)
	}
	h, err := s.get(ctx, projectID, bot.ID, chatID)
	if err != nil {
		return chats.Message{}, err
	}
	if h.Status != StatusTaken || (a.OperatorID != "" && a.OperatorID != h.OperatorID) {
		return chats.Message{}, apperr.New(apperr.Conflict, "handoff_not_taken", "Take the chat over before answering in it.")
	}
	m, err := s.svc.Chats.PostAs(ctx, projectID, bot, chatID, text, &chats.User{UUID: h.OperatorID, Name: cmp.Or(a.Name, bot.Name)})
	if err != nil {
		return chats.Message{}, err
	}
	if err := s.svc.Deliver(ctx, projectID, bot.ID, chatID, text, m.UUID); err != nil {
		return m, err
	}
	if h.FirstReplyAt == nil {
		now := s.now()
		rev := h.Rev
		h.FirstReplyAt, h.UpdatedAt = &now, now
		if err := s.repo.Put(ctx, h, rev, outbox.Event{}); err != nil && apperr.As(err).Kind != apperr.Conflict {
			return m, err
		}
	}
	return m, nil
}

// Note adds an internal note of the team to the chat's handoff: the end user never sees it.
func (s *Service) Note(ctx context.Context, projectID, botID, chatID string, a Actor, text string) (Handoff, error) {
	text = strings.TrimSpace(text)
	if text == "" || utf8.RuneCountInString(text) > MaxNote {
		return Handoff{}, apperr.Invalidf("content", "must be 1 to %d characters", MaxNote)
	}
	for {
		h, err := s.get(ctx, projectID, botID, chatID)
		if err != nil {
			return Handoff{}, err
		}
		if len(h.Notes) >= MaxNotes {
			return Handoff{}, apperr.New(apperr.Conflict, "notes_full", "This handoff has its 200 notes.")
		}
		rev, now := h.Rev, s.now()
		h.Notes, h.UpdatedAt = append(h.Notes, Note{By: a.by(), Text: text, At: now}), now
		err = s.repo.Put(ctx, h, rev, outbox.Event{})
		if apperr.As(err).Kind != apperr.Conflict {
			return h, err
		}
	}
}

// Release hands the chat back to the agent, with note (may be empty) in its next prompt.
func (s *Service) Release(ctx context.Context, projectID string, bot agents.Bot, chatID string, a Actor, note string) (Handoff, error) {
	note = strings.TrimSpace(note)
	if utf8.RuneCountInString(note) > MaxNote {
		return Handoff{}, apperr.Invalidf("note", "must be at most %d characters", MaxNote)
	}
	return s.end(ctx, projectID, bot, chatID, a, StatusReleased, outbox.HandoffReleased, note)
}

// Close closes the chat's handoff: the agent answers the chat again (with no note).
func (s *Service) Close(ctx context.Context, projectID string, bot agents.Bot, chatID string, a Actor) (Handoff, error) {
	return s.end(ctx, projectID, bot, chatID, a, StatusClosed, outbox.HandoffClosed, "")
}

// end ends the chat's open handoff with status and its event, the chat handed back to the
// agent with note.
func (s *Service) end(ctx context.Context, projectID string, bot agents.Bot, chatID string, a Actor, status, typ, note string) (Handoff, error) {
	h, err := s.get(ctx, projectID, bot.ID, chatID)
	if err != nil {
		return Handoff{}, err
	}
	if !h.Open() {
		return Handoff{}, apperr.New(apperr.Conflict, "handoff_not_open", "This chat waits for no one: it was handed back or closed.")
	}
	if h.Status == StatusTaken && a.OperatorID != "" && a.OperatorID != h.OperatorID {
		return Handoff{}, apperr.New(apperr.Conflict, "handoff_taken", "Another operator has taken this chat over.")
	}
	held := h.Status == StatusTaken
	rev, now := h.Rev, s.now()
	h.Status, h.ClosedAt, h.UpdatedAt = status, &now, now
	if err := s.put(ctx, h, rev, typ); err != nil {
		return Handoff{}, err
	}
	if held || note != "" {
		return h, s.svc.Chats.Hold(ctx, projectID, bot.ID, chatID, false, note)
	}
	return h, nil
}
