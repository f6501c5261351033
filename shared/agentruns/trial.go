package agentruns

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
)

// Trial is an agent run's answer made by Try, stored nowhere: what a standard answer's trial
// holds (Cost is that of the run's model calls) and the tools the model called, in order.
type Trial struct {
	chats.Trial
	Calls []TrialCall
}

// TrialCall is a tool call of a trial: the tool's name, the arguments as the model wrote them
// (JSON text), and whether the call was carried out.
type TrialCall struct {
	Name      string
	Arguments string
	Ran       bool
}

// notCarriedOut is what the model observes of a call a trial records without carrying it out.
const notCarriedOut = "The call was recorded and not carried out: this conversation is an evaluation, in which tools " +
	"that change data or reach services outside do not run. Go on as if it had succeeded."

// Try answers question, after the earlier messages of a conversation, as an agent run of bot
// would (the same prompt, tools and cycles, at most MaxCalls model calls), and stores nothing:
// no chat, no execution, no event, no tool call record. It is sandboxed: only the built-in
// tools that read the agent's own data run (Tool.Reads); a call of any other tool (one that
// changes data, the handoff, the agent's own tools, which reach servers outside) is checked
// against its tool's schema and recorded, not carried out, and the model is told so. Nobody is
// asked to approve a call. Eval runs ask agents' versions so.
func (tb *Toolbox) Try(ctx context.Context, cs *chats.Service, projectID string, bot agents.Bot, earlier []chats.Said, question string) (Trial, error) {
	in := chats.Input{Message: &question, ReasoningMode: chats.ModeAgent}
	if err := in.Validate(); err != nil {
		return Trial{}, err
	}
	started := time.Now()
	set, err := tb.For(ctx, projectID, bot.ID, bot.ToolSet())
	if err != nil {
		return Trial{}, err
	}
	if bot.HumanHandoff {
		set = set.withHandoff()
	}
	prior := make([]chats.Message, len(earlier))
	for i, said := range earlier {
		prior[i] = chats.Message{Role: said.Role, Content: said.Content}
	}
	h := &holder{Runner: &Runner{chats: cs, tools: tb, now: func() time.Time { return time.Now().UTC() }},
		e: Execution{ProjectID: projectID, BotID: bot.ID, Request: requestOf(in)}, bot: bot, in: in, set: set,
		turn: chats.Turn{ProjectID: projectID, Bot: bot, Earlier: prior, Input: in}, model: cs.Model(in, bot)}
	calls := []TrialCall{}
	text, model, answered := "", "", false
	for !answered && h.e.Calls < MaxCalls {
		rep, err := h.model.Complete(ctx, h.request(h.e.Calls == MaxCalls-1))
		if err != nil {
			if llm.ToolsRefused(err) && !h.e.TextProtocol {
				h.e.TextProtocol = true
				continue
			}
			return Trial{}, err
		}
		h.e.Calls++
		h.e.Usage.add(rep.Usage)
		model = cmp.Or(rep.Model, model)
		step := h.parse(rep)
		if step.call == nil {
			text, answered = step.answer, true
			continue
		}
		c := Cycle{Cycle: len(h.e.Cycles) + 1, Thought: step.thought, Action: step.call.Name, ActionInput: step.call.Arguments, CallID: step.call.ID}
		ran, err := h.try(ctx, &c)
		if err != nil {
			return Trial{}, err
		}
		calls = append(calls, TrialCall{Name: c.Action, Arguments: c.ActionInput, Ran: ran})
		h.e.Cycles = append(h.e.Cycles, c)
	}
	if text == "" {
		text = capAnswer(h.e)
	}
	model = cmp.Or(model, chats.ModelName(in, bot))
	u := h.e.Usage.provider()
	return Trial{Trial: chats.Trial{Content: text, Model: model, Usage: u, Cost: chats.Cost(model, u),
		Sources: chats.Citations(text, passages(h.e.Cycles)), Took: time.Since(started)}, Calls: calls}, nil
}

// try carries out the cycle's tool when a trial may (a built-in tool that reads; a tool the run
// does not have is observed as such), and says whether it ran; any other call is observed as
// recorded and not carried out, or, when its arguments break its tool's schema, refused as a
// run refuses it.
func (h *holder) try(ctx context.Context, c *Cycle) (bool, error) {
	if strings.TrimSpace(c.ActionInput) == "" {
		c.ActionInput = "{}"
	}
	tool, ok := h.set.Lookup(c.Action)
	if !ok || tool.Reads {
		return ok, h.execute(ctx, c)
	}
	c.Sources, c.ServerLabel, c.Operation = []memory.Ref{}, tool.ServerLabel, tool.Operation
	if err := tool.Check(c.ActionInput); err != nil {
		c.Observation = "Error: " + strings.TrimPrefix(err.Error(), errRefused.Error()+": ")
		return false, nil
	}
	c.Observation = notCarriedOut
	return false, nil
}
