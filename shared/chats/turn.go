package chats

import (
	"cmp"
	"context"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
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

// RequestHandoff flags the agent's chat for a person of the team, once while a request is open
// (shared/inbox implements it): source says what asked, channel where the end user writes.
type RequestHandoff func(ctx context.Context, projectID, botID, chatID, source, reason, channel string) error

// UseHandoffs gives the service the inbox that end users' requests for a person go to. The
// composition root calls it once both exist.
func (s *Service) UseHandoffs(r RequestHandoff) { s.handoff = r }

// The types of the replies of human takeover: to a message of a chat a person took over
// (empty: the person answers), and to a request for a person (the agent's handoff message).
const (
	KindHuman   = "human"
	KindHandoff = "handoff"
)

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
	if t.Chat.Held {
		// A person took the chat over: the message is kept for them, and no model answers it.
		none := s.AgentMessage(t, "", t.User.Model, 0, llm.Usage{}, []memory.Ref{})
		none.CreditUsed = "0"
		r := NewReply(t.Chat.UUID, t.User, t.Started, Answered{Agent: none, Done: true, Kind: KindHuman,
			Usage: UsageOf(llm.Usage{}, t.User.ReasoningType, t.User.Seq), At: t.User.CreatedAt})
		return Outcome{Reply: &r}, nil
	}
	if s.handoff != nil && bot.HumanHandoff && bot.AsksForPerson(t.Question()) {
		if err := s.handoff(ctx, projectID, bot.ID, t.Chat.UUID, "user", "The end user asked for a person.", cmp.Or(in.Channel, "api")); err != nil {
			return Outcome{}, err
		}
		r, err := s.say(ctx, t, KindHandoff, cmp.Or(bot.HandoffMessage, agents.DefaultHandoffMessage))
		return Outcome{Reply: &r}, err
	}
	if note := t.Chat.HandBack; note != "" {
		// The person who had the chat handed it back with a note for the agent: in this prompt.
		t.Input.Instruction = Instruction(t.Input, bot) + "\n\nA person of your team answered this conversation for a while and handed it back to you with this note: " + note
		in.Instruction = t.Input.Instruction
		ev := chatEvents.New(ctx, outbox.ChatUpdated, projectID, bot.ID, t.Chat)
		if err := s.repo.SetChat(ctx, t.Chat.UUID, map[string]any{"hand_back": ""}, ev); err != nil {
			return Outcome{}, err
		}
		s.events.Dispatch(ctx, outbox.Ref{Resource: RecordResource, ID: t.Chat.UUID}, ev)
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
		if err == nil && s.handoff != nil && bot.HumanHandoff && bot.HandoffOnLowConfidence && r.Agent.Confidence == "low" {
			err = s.handoff(ctx, projectID, bot.ID, t.Chat.UUID, "confidence", "The agent's answer found nothing in its memory to stand on (confidence low).",
				cmp.Or(in.Channel, "api"))
		}
	}
	return Outcome{Reply: &r}, err
}
