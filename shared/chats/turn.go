package chats

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"time"
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
	// Tools are the tools runs of the agent b (at the version it serves) may use, as a proposed
	// plan describes them.
	Tools(ctx context.Context, b agents.Bot) ([]llm.Tool, error)
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
// a run edits the chat's workspace with tools when the chat names one, else the text of the
// message is edited), else by reasoning mode (agent: a run; standard: one retrieval and one
// model call). Replies made at once stream to sink when there is one, after sink.Stored.
// A standard reply's prompt, and an agent run's, gets what is known of its user (the asker's
// Remembered), and its message is then queued for the extraction of what it says about them
// (EndUsers), when the agent's memory is on and there is such a user.
func (s *Service) Chat(ctx context.Context, projectID string, bot agents.Bot, asker Asker, in Input, sink Sink) (Outcome, error) {
	chatMode := strings.TrimSpace(in.ChatMode) != ""
	in.modeNamed = chatMode
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
	bot = t.Bot
	if t.Chat.Held {
		// A person took the chat over: the message is kept for them, and no model answers it.
		none := s.AgentMessage(t, "", t.User.Model, 0, llm.Usage{}, []memory.Ref{})
		none.CreditUsed = "0"
		r := NewReply(t.Chat.UUID, t.User, t.Started, Answered{Agent: none, Done: true, Kind: KindHuman,
			Usage: UsageOf(llm.Usage{}, t.User.ReasoningType, t.User.Seq), At: t.User.CreatedAt})
		return Outcome{Reply: &r}, nil
	}
	if reason := s.asksForPerson(ctx, t); reason != "" {
		if err := s.handoff(ctx, projectID, bot.ID, t.Chat.UUID, "user", reason, cmp.Or(in.Channel, "api")); err != nil {
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
	if t.Verdict == Accept || (t.Verdict == "" && (mode == ModeAgent || t.Workspace != "")) {
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
		if offered, err = s.runs.Tools(ctx, t.Bot); err == nil {
			r, err = s.Propose(ctx, t, offered, sink)
		}
	case in.ChatMode == "edit":
		r, err = s.Edit(ctx, t, sink)
	default:
		if r, err = s.Answer(ctx, t, sink); err == nil {
			s.Heard(ctx, t)
			s.Sample(ctx, t, r.Agent)
		}
		if err == nil && s.handoff != nil && bot.HumanHandoff && bot.HandoffOnLowConfidence && r.Agent.Confidence == "low" {
			err = s.handoff(ctx, projectID, bot.ID, t.Chat.UUID, "confidence", "The agent's answer found nothing in its memory to stand on (confidence low).",
				cmp.Or(in.Channel, "api"))
		}
	}
	return Outcome{Reply: &r}, err
}

// classifyTimeout bounds the model's reading of whether a message asks for a person.
const classifyTimeout = 10 * time.Second

// personSchema is the answer the model gives when it reads a message for a request for a person.
var personSchema = llm.Schema{Name: "handoff_request", Schema: map[string]any{
	"type": "object", "additionalProperties": false, "required": []string{"asks_for_person"},
	"properties": map[string]any{"asks_for_person": map[string]any{"type": "boolean"}},
}}

// classifyPrompt asks the model whether a message asks for a person of the team.
const classifyPrompt = "You read one message that a customer wrote to a company's AI assistant. Decide whether the customer " +
	"asks to deal with a human person of the company (a person, a human agent, a representative, an operator, someone of " +
	"the support or sales team, a manager) rather than with the assistant. Questions about people, or complaints that ask " +
	"for no person, do not. Answer only with the JSON object."

// asksForPerson is why the turn t is a request for a person of the team, "" when it is none or
// the agent hands nothing off: a message holding one of the agent's handoff phrases, or, with
// handoff_classify, one that its model reads as such (one short call, made when a provider
// answers the agent; a call that fails reads as no).
func (s *Service) asksForPerson(ctx context.Context, t Turn) string {
	bot := t.Bot
	switch {
	case s.handoff == nil || !bot.HumanHandoff:
		return ""
	case bot.AsksForPerson(t.Question()):
		return "The end user asked for a person."
	case !bot.HandoffClassify:
		return ""
	}
	model := s.Model(t.Input, bot)
	if model.Name() == llm.Offline {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, classifyTimeout)
	defer cancel()
	req := s.request(t)
	req.MaxTokens, req.Schema = 20, &personSchema
	req.Messages = []llm.Message{{Role: llm.RoleSystem, Content: classifyPrompt}, {Role: llm.RoleUser, Content: t.Question()}}
	res, err := model.Complete(ctx, req)
	var verdict struct {
		AsksForPerson bool `json:"asks_for_person"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(res.Content), &verdict)
	}
	if err != nil {
		s.log.Warn("the model's reading of a request for a person failed; read as none", "chat_id", t.Chat.UUID, "error", err)
		return ""
	}
	if verdict.AsksForPerson {
		return "The agent's model read the end user's message as a request for a person."
	}
	return ""
}
