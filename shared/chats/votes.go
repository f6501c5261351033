package chats

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
)

// chatEvents are the events of chats, about the chat.
var chatEvents = outbox.Declare[Chat](outbox.ChatUpdated)

// Votes a message may get.
const (
	VoteUp   = "up"
	VoteDown = "down"
	// VoteNone withdraws a vote.
	VoteNone = "none"
)

// Bounds of votes and chat names.
const (
	MaxVoterLength = 200
	MaxTitleLength = 200
)

// VoteInput is a vote on a message: the same vote again, or none, withdraws the voter's vote.
type VoteInput struct {
	MessageID string `json:"message_id"`
	VoterID   string `json:"voter_id"`
	VoterType string `json:"voter_type"`
	VoteType  string `json:"vote_type"`
}

// VoteStatus is a voter's vote on a message and the message's counts.
type VoteStatus struct {
	MessageID string  `json:"message_id"`
	VoteType  *string `json:"vote_type"`
	Upvotes   int     `json:"upvotes"`
	Downvotes int     `json:"downvotes"`
}

// voter is the key of a voter: its type (user when not given) and id.
func (in *VoteInput) voter(p *apperr.Problems) string {
	in.VoterID, in.VoterType = strings.TrimSpace(in.VoterID), strings.ToLower(strings.TrimSpace(in.VoterType))
	if in.VoterType == "" {
		in.VoterType = "user"
	}
	if in.VoterID == "" || utf8.RuneCountInString(in.VoterID) > MaxVoterLength {
		p.Add("voter_id", "is required, at most %d characters", MaxVoterLength)
	}
	if utf8.RuneCountInString(in.VoterType) > MaxVoterLength {
		p.Add("voter_type", "must be at most %d characters", MaxVoterLength)
	}
	if strings.TrimSpace(in.MessageID) == "" {
		p.Add("message_id", "is required")
	}
	return in.VoterType + ":" + in.VoterID
}

// Vote records a vote on a message of the agent (one per voter: a new vote replaces the
// voter's last, the same vote again or none withdraws it) and returns the voter's vote and the
// message's counts, which its record shows from then on.
func (s *Service) Vote(ctx context.Context, projectID, botID string, in VoteInput) (VoteStatus, error) {
	var p apperr.Problems
	voter := in.voter(&p)
	in.VoteType = strings.ToLower(strings.TrimSpace(in.VoteType))
	if !slices.Contains([]string{VoteUp, VoteDown, VoteNone}, in.VoteType) {
		p.Add("vote_type", "must be up, down or none")
	}
	if err := p.Err(); err != nil {
		return VoteStatus{}, err
	}
	m, err := s.repo.Message(ctx, projectID, botID, strings.TrimSpace(in.MessageID))
	if err != nil {
		return VoteStatus{}, err
	}
	prev, err := s.repo.VoteOf(ctx, m.UUID, voter)
	if err != nil {
		return VoteStatus{}, err
	}
	vote := in.VoteType
	if vote == VoteNone || vote == prev {
		vote = ""
	}
	up, down, err := s.repo.Tally(ctx, m, voter, vote)
	if err != nil {
		return VoteStatus{}, err
	}
	m.Upvotes, m.Downvotes = up, down
	ev := messageEvents.New(ctx, outbox.ChatMessageUpdated, projectID, botID, EventOf(m))
	ref, err := s.repo.UpdateMessage(ctx, m, ev)
	if err != nil {
		return VoteStatus{}, err
	}
	s.events.Dispatch(ctx, ref, ev)
	st := VoteStatus{MessageID: m.UUID, Upvotes: up, Downvotes: down}
	if vote != "" {
		st.VoteType = &vote
	}
	return st, nil
}

// VoteOf returns the voter's vote on a message of the agent and the message's counts.
func (s *Service) VoteOf(ctx context.Context, projectID, botID string, in VoteInput) (VoteStatus, error) {
	var p apperr.Problems
	voter := in.voter(&p)
	if err := p.Err(); err != nil {
		return VoteStatus{}, err
	}
	m, err := s.repo.Message(ctx, projectID, botID, strings.TrimSpace(in.MessageID))
	if err != nil {
		return VoteStatus{}, err
	}
	vote, err := s.repo.VoteOf(ctx, m.UUID, voter)
	st := VoteStatus{MessageID: m.UUID, Upvotes: m.Upvotes, Downvotes: m.Downvotes}
	if vote != "" {
		st.VoteType = &vote
	}
	return st, err
}

// DeleteMessage removes a message of the agent from its chat.
func (s *Service) DeleteMessage(ctx context.Context, projectID, botID, id string) error {
	if id = strings.TrimSpace(id); id == "" {
		return apperr.Invalidf("message_id", "is required")
	}
	m, err := s.repo.Message(ctx, projectID, botID, id)
	if err != nil {
		return err
	}
	ev := messageEvents.New(ctx, outbox.ChatMessageDeleted, projectID, botID, EventOf(m))
	ref, err := s.repo.DeleteMessage(ctx, m, ev)
	if err != nil {
		return err
	}
	s.events.Dispatch(ctx, ref, ev)
	return nil
}

// Rename sets a chat's title.
func (s *Service) Rename(ctx context.Context, projectID, botID, id, name string) (Chat, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxTitleLength {
		return Chat{}, apperr.Invalidf("name", "is required, at most %d characters", MaxTitleLength)
	}
	return s.setChat(ctx, projectID, botID, id, "title", name)
}

// SetMode sets a chat's default chat_mode: what its messages that name none use.
func (s *Service) SetMode(ctx context.Context, projectID, botID, id, mode string) (Chat, error) {
	mode = strings.ToLower(strings.TrimSpace(mode))
	if !slices.Contains(ChatModes, mode) {
		return Chat{}, apperr.Invalidf("mode", "must be one of %s", strings.Join(ChatModes, ", "))
	}
	return s.setChat(ctx, projectID, botID, id, "mode", mode)
}

// Hold takes the chat over for a person (held) or hands it back to the agent with handBack, a
// note for the agent's next prompt.
func (s *Service) Hold(ctx context.Context, projectID, botID, id string, held bool, handBack string) error {
	c, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return err
	}
	c.Held, c.HandBack = held, handBack
	ev := chatEvents.New(ctx, outbox.ChatUpdated, projectID, botID, c)
	if err := s.repo.SetChat(ctx, c.UUID, map[string]any{"held": held, "hand_back": handBack}, ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: RecordResource, ID: c.UUID}, ev)
	return nil
}

func (s *Service) setChat(ctx context.Context, projectID, botID, id, field, value string) (Chat, error) {
	c, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return Chat{}, err
	}
	switch field {
	case "title":
		c.Title = value
	case "mode":
		c.Mode = value
	}
	ev := chatEvents.New(ctx, outbox.ChatUpdated, projectID, botID, c)
	if err := s.repo.SetChat(ctx, c.UUID, map[string]any{field: value}, ev); err != nil {
		return Chat{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: RecordResource, ID: c.UUID}, ev)
	return c, nil
}
