package stats

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// AgentRun is one agent run (a reasoning_mode agent turn), as the statistics read it.
type AgentRun struct {
	Status string
	// Cycles counts its reasoning cycles; ErrorCode is the code of its failure, if it failed.
	Cycles    int
	ErrorCode string
	CreatedAt time.Time
}

// WorkflowRun is one run of a workflow of the agent, as the statistics read it.
type WorkflowRun struct {
	WorkflowID string
	Status     string
	CreatedAt  time.Time
	StartedAt  *time.Time
	EndedAt    *time.Time
}

// Statuses that end a run (agentruns' and workflows' alike).
const (
	statusSucceeded = "succeeded"
	statusFailed    = "failed"
)

// Runs are the agent runs of the window: how many, by status, and their cycles.
type Runs struct {
	Runs     int            `json:"runs"`
	ByStatus map[string]int `json:"by_status"`
	// Cycles is the distribution of the reasoning cycles of the runs that ended.
	Cycles Latency `json:"cycles_per_run"`
}

type runFigures struct {
	r      Runs
	cycles []float64
}

func newRunFigures() *runFigures { return &runFigures{r: Runs{ByStatus: map[string]int{}}} }

func (s *runFigures) add(r AgentRun) {
	s.r.Runs++
	s.r.ByStatus[r.Status]++
	if r.Status == statusSucceeded || r.Status == statusFailed {
		s.cycles = append(s.cycles, float64(r.Cycles))
	}
}

func (s *runFigures) result() Runs {
	r := s.r
	r.Cycles = latencyOf(s.cycles)
	return r
}

// WorkflowUse is the runs of one workflow.
type WorkflowUse struct {
	WorkflowID string         `json:"workflow_id"`
	Runs       int            `json:"runs"`
	ByStatus   map[string]int `json:"by_status"`
	// DurationMS is the distribution of the durations of its runs that ended, from start to end.
	DurationMS Latency `json:"duration_ms"`
}

// Workflows are the agent's workflow runs of the window by outcome, in total and by workflow
// (the most run first).
type Workflows struct {
	Runs      int            `json:"runs"`
	ByStatus  map[string]int `json:"by_status"`
	Workflows []WorkflowUse  `json:"workflows"`
}

type workflowFigures struct {
	uses  map[string]*WorkflowUse
	times map[string][]float64
}

func newWorkflowFigures() *workflowFigures {
	return &workflowFigures{uses: map[string]*WorkflowUse{}, times: map[string][]float64{}}
}

func (s *workflowFigures) add(r WorkflowRun) {
	u := s.uses[r.WorkflowID]
	if u == nil {
		u = &WorkflowUse{WorkflowID: r.WorkflowID, ByStatus: map[string]int{}}
		s.uses[r.WorkflowID] = u
	}
	u.Runs++
	u.ByStatus[r.Status]++
	if r.StartedAt != nil && r.EndedAt != nil && (r.Status == statusSucceeded || r.Status == statusFailed) {
		s.times[r.WorkflowID] = append(s.times[r.WorkflowID], float64(r.EndedAt.Sub(*r.StartedAt).Milliseconds()))
	}
}

func (s *workflowFigures) result() Workflows {
	w := Workflows{ByStatus: map[string]int{}, Workflows: []WorkflowUse{}}
	for id, u := range s.uses {
		u.DurationMS = latencyOf(s.times[id])
		w.Runs += u.Runs
		for st, n := range u.ByStatus {
			w.ByStatus[st] += n
		}
		w.Workflows = append(w.Workflows, *u)
	}
	slices.SortFunc(w.Workflows, func(a, b WorkflowUse) int {
		return cmp.Or(cmp.Compare(b.Runs, a.Runs), cmp.Compare(a.WorkflowID, b.WorkflowID))
	})
	return w
}

// Workflows are the agent's workflow runs by outcome and workflow.
func (s *Service) Workflows(ctx context.Context, projectID, botID string, w Window) (Report[Workflows], error) {
	return gather(w, newWorkflowFigures, func(each func(WorkflowRun) error) error {
		return s.repo.WorkflowRuns(ctx, projectID, botID, w.From, w.To, each)
	}, func(r WorkflowRun) time.Time { return r.CreatedAt })
}

// agentRuns gathers the agent runs of w.
func (s *Service) agentRuns(ctx context.Context, projectID, botID string, w Window) (Report[Runs], error) {
	return gather(w, newRunFigures, func(each func(AgentRun) error) error {
		return s.repo.AgentRuns(ctx, projectID, botID, w.From, w.To, each)
	}, func(r AgentRun) time.Time { return r.CreatedAt })
}
