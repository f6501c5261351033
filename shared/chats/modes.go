package chats

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
)

// Verdicts of a user's answer to a proposed plan.
const (
	Accept = "accept"
	Reject = "reject"
	Revise = "revise"
)

// MaxPlanSteps bounds the steps of a plan.
const MaxPlanSteps = 8

var (
	accepting = regexp.MustCompile(`(?i)^\W*(yes|yep|yeah|ok|okay|sure|go|go ahead|proceed|accept|accepted|approve|approved|do it|run it|sounds good|looks good|lgtm|start|execute|confirm|confirmed)\b[\s\W]*(please|thanks|thank you)?[\s\W]*$`)
	rejecting = regexp.MustCompile(`(?i)^\W*(no|nope|cancel|stop|reject|rejected|abort|drop it|forget it|never ?mind|don'?t)\b`)
	numbered  = regexp.MustCompile(`(?m)^\s*(\d{1,2})[.)]\s+(.+?)\s*$`)
	fenced    = regexp.MustCompile("(?s)```([\\w+#.-]*)[ \\t]*\\n(.*?)\\n?```")
)

// Verdict reads a user's answer to a proposed plan: accept ("yes", "go ahead", "looks good"
// alone), reject (it begins "no", "cancel", "stop"...), else revise: the message changes the plan.
func Verdict(message string) string {
	switch {
	case accepting.MatchString(message):
		return Accept
	case rejecting.MatchString(message):
		return Reject
	}
	return Revise
}

// Propose answers the turn t with a numbered plan of at most MaxPlanSteps steps for its request
// (chat_mode plan), using tools the agent has (described by tools), and keeps the plan on the
// chat until the user answers it. A turn that revises a proposed plan plans the revised request.
func (s *Service) Propose(ctx context.Context, t Turn, tools []llm.Tool, sink Sink) (Reply, error) {
	request := t.Question()
	if t.Verdict == Revise && t.Chat.Plan != nil {
		request = t.Chat.Plan.Request + "\n\nChange to the plan: " + t.Question()
	}
	var sys strings.Builder
	sys.WriteString(Instruction(t.Input, t.Bot))
	sys.WriteString("\n\nDo not carry out the request yet. Answer only with a numbered plan of at most ")
	fmt.Fprintf(&sys, "%d short steps (\"1. ...\"), one line each, that you will carry out once the user accepts it. You will be able to use these tools:", MaxPlanSteps)
	for _, tool := range tools {
		fmt.Fprintf(&sys, "\n- %s: %s", tool.Name, tool.Description)
	}
	req := s.request(t)
	req.Messages = append(append([]llm.Message{{Role: llm.RoleSystem, Content: sys.String()}}, History(t.Earlier)...),
		llm.Message{Role: llm.RoleUser, Content: request})
	var steps []string
	return s.respond(ctx, t, sink, pass{req: req, kind: "plan",
		text: func(text string) string {
			steps = Steps(text)
			if len(steps) == 0 {
				steps = []string{strings.TrimSpace(text)}
			}
			var b strings.Builder
			for i, st := range steps {
				fmt.Fprintf(&b, "%d. %s\n", i+1, st)
			}
			return strings.TrimSpace(b.String())
		},
		after: func(r *Reply) {
			r.IsComplete, r.HasMoreSteps, r.Converged, r.TotalSteps = false, true, false, len(steps)
			r.StepInfo = fmt.Sprintf("A plan of %d steps: answer yes to carry it out, say what to change, or no to drop it.", len(steps))
			if err := s.repo.SetPlan(ctx, t.Chat.UUID, &Plan{Request: request, Steps: steps}); err != nil {
				s.log.Warn("plan not kept", "chat_id", t.Chat.UUID, "error", err)
			}
		}})
}

// Steps reads the numbered lines of a plan, at most MaxPlanSteps.
func Steps(text string) []string {
	var steps []string
	for _, m := range numbered.FindAllStringSubmatch(text, -1) {
		if len(steps) < MaxPlanSteps {
			steps = append(steps, m[2])
		}
	}
	return steps
}

// Accepted removes the chat's plan as the user accepted it, and returns it.
func (s *Service) Accepted(ctx context.Context, t Turn) (Plan, error) {
	if t.Chat.Plan == nil {
		return Plan{}, nil
	}
	return *t.Chat.Plan, s.repo.SetPlan(ctx, t.Chat.UUID, nil)
}

// Drop answers a turn that rejects the proposed plan: the plan is dropped and the agent says
// so, without a model call.
func (s *Service) Drop(ctx context.Context, t Turn) (Reply, error) {
	if err := s.repo.SetPlan(ctx, t.Chat.UUID, nil); err != nil {
		return Reply{}, err
	}
	return s.say(ctx, t, "plan", "Okay, I dropped the plan. Tell me what you would like instead.")
}

// Post adds text to the agent's chat chatID (a new chat when empty) as a message of the agent,
// without a model call (workflows' send_message).
func (s *Service) Post(ctx context.Context, projectID string, bot agents.Bot, chatID, text string) (Message, error) {
	return s.PostAs(ctx, projectID, bot, chatID, text, nil)
}

// PostAs is Post of a message by, a person of the team answering in the agent's place (the
// agent when nil).
func (s *Service) PostAs(ctx context.Context, projectID string, bot agents.Bot, chatID, text string, by *User) (Message, error) {
	in := Input{Message: &text, ChatID: chatID}
	chat, isNew, err := s.chatFor(ctx, projectID, bot, Asker{}, in)
	if err != nil {
		return Message{}, err
	}
	write := s.repo.Append
	if isNew {
		write = s.started
	}
	t := Turn{ProjectID: projectID, Bot: bot, Chat: chat, Started: time.Now(),
		User: Message{Model: bot.Model, Complexity: Complexity(text), Preference: Preference{ReasoningType: "standard", Model: bot.Model, Complexity: Complexity(text)}}}
	m := s.AgentMessage(t, text, bot.Model, 0, llm.Usage{}, []memory.Ref{})
	m.CreditUsed = "0"
	if by != nil {
		m.User = *by
	}
	return m, s.store(ctx, projectID, bot, &chat, &m, write, false)
}

// say answers the turn t with text, without a model call (credit 0).
func (s *Service) say(ctx context.Context, t Turn, kind, text string) (Reply, error) {
	agent := s.AgentMessage(t, text, t.User.Model, 0, llm.Usage{}, []memory.Ref{})
	agent.CreditUsed = "0"
	if err := s.Append(ctx, t.ProjectID, t.Bot, &t.Chat, &agent); err != nil {
		return Reply{}, err
	}
	return NewReply(t.Chat.UUID, t.User, t.Started, Answered{Agent: agent, Done: true, Kind: kind,
		Usage: UsageOf(llm.Usage{}, t.User.ReasoningType, agent.Seq), At: agent.CreatedAt}), nil
}

// Edit answers a turn of chat_mode edit: the text to edit is the first fenced block (```) of the
// message, else the first fenced block of the agent's previous reply, else that whole reply.
// The model rewrites it as the message asks; the reply is the edited text and its context a
// unified diff from the original. With nothing to edit, the agent asks for it (no model call).
func (s *Service) Edit(ctx context.Context, t Turn, sink Sink) (Reply, error) {
	target, lang, ask := editTarget(t.Question(), t.Earlier)
	if target == "" {
		return s.say(ctx, t, "edit", "Send the text to edit in a fenced block (```), or ask for an edit of one of my replies.")
	}
	sys := Instruction(t.Input, t.Bot) + "\n\nYou edit text. Apply the user's requested change to the text they give and answer with the complete edited text only: no explanation, no code fences."
	user := fmt.Sprintf("Change requested: %s\n\nText to edit:\n```%s\n%s\n```", ask, lang, target)
	req := s.request(t)
	req.Messages = []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}}
	return s.respond(ctx, t, sink, pass{req: req, kind: "edit", text: unfence,
		after: func(r *Reply) {
			r.Context = udiff.Unified("original", "edited", withNewline(target), withNewline(r.Reply))
		}})
}

// editTarget finds the text a message asks to edit, its language tag, and the request without
// the text.
func editTarget(message string, earlier []Message) (target, lang, ask string) {
	if m := fenced.FindStringSubmatchIndex(message); m != nil {
		ask = strings.TrimSpace(message[:m[0]] + message[m[1]:])
		return message[m[4]:m[5]], message[m[2]:m[3]], ask
	}
	for _, m := range slices.Backward(earlier) {
		if m.Role != RoleAgent {
			continue
		}
		if f := fenced.FindStringSubmatch(m.Content); f != nil {
			return f[2], f[1], message
		}
		return m.Content, "", message
	}
	return "", "", message
}

// unfence removes a code fence the model put around its whole answer.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if f := fenced.FindStringSubmatch(t); f != nil && strings.HasPrefix(t, "```") && strings.HasSuffix(t, "```") {
		return f[2]
	}
	return t
}

func withNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
