// Package stats is an agent's statistics: figures over the messages written in its chats (kept
// by the hour as their events arrive, see Recorder), its recorded tool calls, its agent runs and
// its workflow runs, for a window of time, in total and as a series of buckets.
package stats

import (
	"context"
	"strconv"
	"time"
)

// Repo keeps what the statistics are computed from: the hours and votes folded from events,
// and the tool calls, agent runs and workflow runs other packages record.
type Repo interface {
	// Hours calls each with every hour of the project's agent starting in [from, to), in no
	// particular order, stopping at the first error each returns.
	Hours(ctx context.Context, projectID, botID string, from, to time.Time, each func(Hourly) error) error
	// ToolCalls calls each once for every recorded tool call of the project's agent made in
	// [from, to), in no particular order, stopping at the first error each returns.
	ToolCalls(ctx context.Context, projectID, botID string, from, to time.Time, each func(ToolCall) error) error
	// AgentRuns calls each once for every agent run of the project's agent created in
	// [from, to), under way or ended.
	AgentRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(AgentRun) error) error
	// WorkflowRuns calls each once for every run of the agent's workflows created in [from, to).
	WorkflowRuns(ctx context.Context, projectID, botID string, from, to time.Time, each func(WorkflowRun) error) error
	// Handoffs calls each with the agent's handoffs requested in [from, to).
	Handoffs(ctx context.Context, projectID, botID string, from, to time.Time, each func(Handoff) error) error
}

// Service computes an agent's statistics.
type Service struct {
	repo Repo
	// online reads the gradings of live answers (Online); nil reads none.
	online OnlineRepo
}

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
