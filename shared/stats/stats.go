// Package stats is an agent's statistics: figures over the messages stored in its chats, its
// recorded tool calls, its agent runs and its workflow runs, for a window of time, in total and
// as a series of buckets, computed when asked (see Repo).
package stats

import (
	"context"
	"strconv"
	"time"
)

// Fact is one stored message of an agent, as the statistics read it.
type Fact struct {
	UUID   string
	ChatID string
	// User is who wrote the chat: the end user (subscriber) the chat belongs to, else the
	// message's user (the account behind the key).
	User          string
	Role          string
	ReasoningType string
	Tokens        int
	CreditUsed    string
	EstimatedCost string
	// EstimatedTimeMS is how long the reply took, as the message records it.
	EstimatedTimeMS string
	Upvotes         int
	Downvotes       int
	CreatedAt       time.Time
}

// Repo reads what the statistics are computed from.
type Repo interface {
	// Messages calls each once for every message of the project's agent created in
	// [from, to), in no particular order, stopping at the first error each returns.
	Messages(ctx context.Context, projectID, botID string, from, to time.Time, each func(Fact) error) error
	// ToolCalls calls each once for every recorded tool call of the project's agent made in
	// [from, to), in no particular order, stopping at the first error each returns.
	ToolCalls(ctx context.Context, projectID, botID string, from, to time.Time, each func(ToolCall) error) error
	// AgentRuns calls each once for every agent run of the project's agent created in
	// [from, to), under way or ended.
	AgentRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(AgentRun) error) error
	// WorkflowRuns calls each once for every run of the agent's workflows created in [from, to).
	WorkflowRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(WorkflowRun) error) error
}

// Service computes an agent's statistics.
type Service struct{ repo Repo }

// NewService returns the statistics read from repo.
func NewService(repo Repo) *Service { return &Service{repo: repo} }

// number reads a decimal a message stores as a string; what is not one counts as 0.
func number(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

// Resource names the statistics in errors.
const Resource = "stats"
