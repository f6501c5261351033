package chats

import (
	"time"

	"github.com/agentplane/agentplane/shared/memory"
)

// Answered is how a turn was answered, or how far the agent run answering it is: what NewReply
// needs besides the turn's user message.
type Answered struct {
	// Agent is the agent's message: the answer when Done, else the one a working run shows.
	Agent Message
	Done  bool
	// Kind is the reply's type: standard, plan, edit, agent.
	Kind  string
	Usage Usage
	// Sources are the passages the answer cites; Context the passages it was given.
	Sources []memory.Ref
	Context string
	// Steps and Cycles count the steps and reasoning cycles; Reasoning holds the cycles.
	Steps, Cycles int
	Reasoning     []any
	// Executed are the tool calls made; Tools how many tools the answer could use.
	Executed []any
	Tools    int
	// ExecutionID is the agent run's; StepInfo says how far it is.
	ExecutionID string
	StepInfo    string
	// Tool is the call waiting for approval, when one does.
	Tool *Tool
	// Capped is a run stopped at its cap rather than having converged.
	Capped bool
	// At is when the reply's state was reached (its analytics id).
	At time.Time
}

// NewReply is the chat object answering a turn: the one constructor of every reply, made at once
// or by an agent run, finished or not. started is when the turn began.
func NewReply(chatID string, user Message, started time.Time, a Answered) Reply {
	pref := user.Preference
	if a.Done && a.Agent.Model != "" {
		pref.Model = a.Agent.Model
	}
	r := Reply{ChatID: chatID, User: user, Agent: a.Agent, Preference: pref, ConfigUsed: pref,
		Meta: orEmpty(a.Sources), Sources: orEmpty(a.Sources), Usage: a.Usage, AnalyticsID: AnalyticsID(a.At),
		ActualTimeMS: time.Since(started).Milliseconds(), AvailableTools: a.Tools, TotalSteps: a.Steps, TotalCycles: a.Cycles,
		Type: a.Kind, OriginalQuery: user.Content, Context: a.Context, ExecutionID: a.ExecutionID, StepInfo: a.StepInfo,
		Tool: a.Tool, RequiresApprove: a.Tool != nil, IsComplete: a.Done, HasMoreSteps: !a.Done, Converged: a.Done && !a.Capped,
		ExecutedTools: orEmpty(a.Executed), ReasoningSteps: orEmpty(a.Reasoning), Reasoning: orEmpty(a.Reasoning), ReasoningCycles: orEmpty(a.Reasoning)}
	if a.Done {
		r.Reply, r.FinalAnswer = a.Agent.Content, a.Agent.Content
	}
	return r
}

// orEmpty is s, or an empty slice for nil: the reply's lists are never null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
