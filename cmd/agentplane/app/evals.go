package app

import (
	"context"

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
	return evalAgent{chats: d.Chats, projectID: projectID, bot: bot}, nil
}

// evalAgent is an agent's version as eval runs ask it: a standard chat turn that stores no chat,
// and its model provider for the judge.
type evalAgent struct {
	chats     *chats.Service
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
	tr, err := a.chats.Try(ctx, a.projectID, a.bot, earlier, c.Question())
	if err != nil {
		return evals.Answer{}, err
	}
	sources := make([]evals.Source, len(tr.Sources))
	for i, ref := range tr.Sources {
		sources[i] = evals.Source{ID: ref.SourceID, Title: ref.Title}
	}
	return evals.Answer{Text: tr.Content, Sources: sources, ToolCalls: []evals.ToolCall{}, Latency: tr.Took,
		Tokens: tr.Usage.TotalTokens, Cost: tr.Cost}, nil
}

func (a evalAgent) Complete(ctx context.Context, r llm.Request) (llm.Reply, error) {
	if r.Model == "" {
		r.Model = a.bot.Model
	}
	return a.chats.Model(chats.Input{}, a.bot).Complete(ctx, r)
}
