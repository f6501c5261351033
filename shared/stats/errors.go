package stats

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Sources of errors.
const (
	SourceAgentRun    = "agent_run"
	SourceWorkflowRun = "workflow_run"
	SourceToolCall    = "tool_call"
)

// failure is one error of the agent: where it happened and its code.
type failure struct {
	source, code string
	at           time.Time
}

// ErrorCount is how often one error happened.
type ErrorCount struct {
	Source string `json:"source"`
	Code   string `json:"code"`
	Count  int    `json:"count"`
}

// Errors are the agent's errors of the window by source and code, the most frequent first.
type Errors struct {
	Errors int          `json:"errors"`
	ByCode []ErrorCount `json:"by_code"`
}

type errorFigures struct{ counts map[[2]string]int }

func newErrorFigures() *errorFigures { return &errorFigures{counts: map[[2]string]int{}} }

func (s *errorFigures) add(f failure) { s.counts[[2]string{f.source, f.code}]++ }

func (s *errorFigures) result() Errors {
	e := Errors{ByCode: []ErrorCount{}}
	for k, n := range s.counts {
		e.Errors += n
		e.ByCode = append(e.ByCode, ErrorCount{Source: k[0], Code: k[1], Count: n})
	}
	slices.SortFunc(e.ByCode, func(a, b ErrorCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Code, b.Code))
	})
	return e
}

// Errors are the agent's failed agent runs (by their error's code), failed workflow runs (code
// failed) and tool calls whose outcome is not ok (by outcome).
func (s *Service) Errors(ctx context.Context, projectID, botID string, w Window) (Report[Errors], error) {
	return gather(w, newErrorFigures, func(each func(failure) error) error {
		err := s.repo.AgentRuns(ctx, projectID, botID, w.From, w.To, func(r AgentRun) error {
			if r.Status != statusFailed {
				return nil
			}
			return each(failure{source: SourceAgentRun, code: cmp.Or(r.ErrorCode, "unknown"), at: r.CreatedAt})
		})
		if err == nil {
			err = s.repo.WorkflowRuns(ctx, projectID, botID, w.From, w.To, func(r WorkflowRun) error {
				if r.Status != statusFailed {
					return nil
				}
				return each(failure{source: SourceWorkflowRun, code: statusFailed, at: r.CreatedAt})
			})
		}
		if err == nil {
			err = s.repo.ToolCalls(ctx, projectID, botID, w.From, w.To, func(c ToolCall) error {
				if c.Outcome == outcomeOK {
					return nil
				}
				return each(failure{source: SourceToolCall, code: c.Outcome, at: c.At})
			})
		}
		return err
	}, func(f failure) time.Time { return f.at })
}
