package app

import (
	"context"
	"encoding/json"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/llm"
)

// evalConcurrency is how many cases of one eval run a worker answers at once.
const evalConcurrency = 4

// evalAgents give eval runs the version of an agent they ask.
func (d *Domain) evalAgents(ctx context.Context, projectID, botID string, version int) (evals.Agent, error) {
	bot, err := d.Agents.Get(ctx, projectID, botID)
	if err != nil {
		return nil, err
	}
	if bot, err = d.Agents.At(ctx, bot, version); err != nil {
		return nil, err
	}
	return evalAgent{chats: d.Chats, tools: d.Toolbox, projectID: projectID, bot: bot}, nil
}

// evalAgent is an agent's version as eval runs ask it: a standard chat turn, or an agent run
// when the agent's reasoning type gives the case's message one (agentruns' Try, sandboxed),
// either storing nothing; and its model provider for the judge.
type evalAgent struct {
	chats     *chats.Service
	tools     *agentruns.Toolbox
	projectID string
	bot       agents.Bot
}

func (a evalAgent) Answer(ctx context.Context, c evals.Case) (evals.Answer, error) {
	var earlier []chats.Said
	for _, t := range c.Conversation[:max(len(c.Conversation)-1, 0)] {
		role := chats.RoleUser
		if t.Role == evals.RoleAssistant {
			role = chats.RoleAgent
		}
		earlier = append(earlier, chats.Said{Role: role, Content: t.Content})
	}
	question := c.Question()
	if chats.Mode(chats.Input{ReasoningMode: a.bot.ReasoningType, Message: &question}) == chats.ModeAgent {
		return a.run(ctx, earlier, question)
	}
	tr, err := a.chats.Try(ctx, a.projectID, a.bot, earlier, question)
	if err != nil {
		return evals.Answer{}, err
	}
	return answerOf(tr, []evals.ToolCall{}), nil
}

// run answers the question as an agent run of the version, with the tool calls it made (their
// arguments as objects; arguments that are not one are left out).
func (a evalAgent) run(ctx context.Context, earlier []chats.Said, question string) (evals.Answer, error) {
	tr, err := a.tools.Try(ctx, a.chats, a.projectID, a.bot, earlier, question)
	if err != nil {
		return evals.Answer{}, err
	}
	calls := make([]evals.ToolCall, len(tr.Calls))
	for i, c := range tr.Calls {
		calls[i] = evals.ToolCall{Name: c.Name, Executed: c.Ran}
		if json.Unmarshal([]byte(c.Arguments), &calls[i].Arguments) != nil {
			calls[i].Arguments = nil
		}
	}
	return answerOf(tr.Trial, calls), nil
}

// answerOf is the answer of trial tr, with the tool calls it made.
func answerOf(tr chats.Trial, calls []evals.ToolCall) evals.Answer {
	sources := make([]evals.Source, len(tr.Sources))
	for i, ref := range tr.Sources {
		sources[i] = evals.Source{ID: ref.SourceID, Title: ref.Title}
	}
	return evals.Answer{Text: tr.Content, Sources: sources, ToolCalls: calls, Latency: tr.Took, Tokens: tr.Usage.TotalTokens, Cost: tr.Cost}
}

func (a evalAgent) Complete(ctx context.Context, r llm.Request) (llm.Reply, error) {
	if r.Model == "" {
		r.Model = a.bot.Model
	}
	return a.chats.Model(chats.Input{}, a.bot).Complete(ctx, r)
}
