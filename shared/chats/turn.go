package chats

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/llm"
)

// AgentRuns carry out the turns answered by an agent run (shared/agentruns implements it).
type AgentRuns interface {
	// Start stores a run for the turn t, carrying out plan when it has steps, and queues it; it
	// returns the run's id. providerKey, the request's own, travels with the run and is never
	// stored.
	Start(ctx context.Context, t Turn, providerKey string, plan Plan) (string, error)
	// Tools are the tools runs of the agent may use, as a proposed plan describes them.
	Tools(ctx context.Context, projectID, botID string) ([]llm.Tool, error)
}

// UseAgentRuns gives the service the agent runs that carry out the turns it does not answer at
// once. The composition root calls it once both exist (runs store their messages in chats).
func (s *Service) UseAgentRuns(r AgentRuns) { s.runs = r }

// Outcome is how a chat message is answered: a reply made at once, or the agent run that
// answers it.
type Outcome struct {
	Reply *Reply
	// RunID is the run to follow, when an agent run answers.
	RunID string
}

// Chat takes a turn of the conversation: it stores the user's message, then answers by the
// chat's proposed plan when it has one (accepted: a run carries it out; rejected: dropped; else
// revised), by chat_mode (the request's, else the chat's default; plan: a plan is proposed; edit:
// the text is edited), else by reasoning mode (agent: a run; standard: one retrieval and one
// model call). Replies made at once stream to sink when there is one, after sink.Stored.
// A standard reply's prompt, and an agent run's, gets what is known of its user (the asker's
// Remembered), and its message is then queued for the extraction of what it says about them
// (EndUsers), when the agent's memory is on and there is such a user.
func (s *Service) Chat(ctx context.Context, projectID string, bot agents.Bot, asker Asker, in Input, sink Sink) (Outcome, error) {
	chatMode := strings.TrimSpace(in.ChatMode) != ""
	if err := in.Validate(); err != nil {
		return Outcome{}, err
	}
	if utf8.RuneCountInString(asker.EndUser) > MaxEndUser {
		return Outcome{}, apperr.Invalidf("user", "must be at most %d characters", MaxEndUser)
	}
	mode := Mode(in)
	if in.ChatMode != "ask" {
		mode = ModeStandard
	}
	t, err := s.Begin(ctx, projectID, bot, asker, in, mode)
	if err != nil {
		return Outcome{}, err
	}
	if s.remembers(bot, in) {
		t.EndUser = asker.Remembered()
	}
	if !chatMode && t.Chat.Mode != "" && t.Chat.Mode != in.ChatMode {
		// The chat's default mode (PUT /v1/bot/chat/mode) applies to messages that name none.
		in.ChatMode, t.Input.ChatMode = t.Chat.Mode, t.Chat.Mode
		if in.ChatMode != "ask" {
			mode = ModeStandard
		}
	}
	if t.Verdict == Accept || (t.Verdict == "" && mode == ModeAgent) {
		var plan Plan
		if t.Verdict == Accept {
			if plan, err = s.Accepted(ctx, t); err != nil {
				return Outcome{}, err
			}
		}
		id, err := s.runs.Start(ctx, t, in.ProviderKey, plan)
		return Outcome{RunID: id}, err
	}
	if sink != nil {
		if err := sink.Stored(t.User); err != nil {
			return Outcome{}, err
		}
	}
	var r Reply
	switch {
	case t.Verdict == Reject:
		r, err = s.Drop(ctx, t)
	case t.Verdict == Revise || in.ChatMode == "plan":
		var offered []llm.Tool
		if offered, err = s.runs.Tools(ctx, t.ProjectID, t.Bot.ID); err == nil {
			r, err = s.Propose(ctx, t, offered, sink)
		}
	case in.ChatMode == "edit":
		r, err = s.Edit(ctx, t, sink)
	default:
		if r, err = s.Answer(ctx, t, sink); err == nil {
			s.Heard(ctx, t)
		}
	}
	return Outcome{Reply: &r}, err
}
