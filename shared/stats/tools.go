package stats

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// ToolCall is one recorded call of an agent's tool, as the statistics read it.
type ToolCall struct {
	ToolID     string
	Operation  string
	Outcome    string
	DurationMS int64
	At         time.Time
}

// outcomeOK is a call that succeeded (tools.OutcomeOK).
const outcomeOK = "ok"

// ToolUse is the calls of one operation of one tool.
type ToolUse struct {
	ToolID    string `json:"tool_id"`
	Operation string `json:"operation"`
	Calls     int    `json:"calls"`
	// Errors counts the calls whose outcome is not ok; ErrorRate is Errors / Calls.
	Errors    int            `json:"errors"`
	ErrorRate float64        `json:"error_rate"`
	Outcomes  map[string]int `json:"outcomes"`
	// DurationMS is the distribution of the calls' durations.
	DurationMS Latency `json:"duration_ms"`
}

// Tools are the agent's tool calls by tool and operation, the most called first.
type Tools struct {
	Calls  int       `json:"calls"`
	Errors int       `json:"errors"`
	Tools  []ToolUse `json:"tools"`
}

type toolKey struct{ tool, operation string }

type toolFigures struct {
	uses  map[toolKey]*ToolUse
	times map[toolKey][]float64
}

func newToolFigures() *toolFigures {
	return &toolFigures{uses: map[toolKey]*ToolUse{}, times: map[toolKey][]float64{}}
}

func (s *toolFigures) add(c ToolCall) {
	k := toolKey{c.ToolID, c.Operation}
	u := s.uses[k]
	if u == nil {
		u = &ToolUse{ToolID: c.ToolID, Operation: c.Operation, Outcomes: map[string]int{}}
		s.uses[k] = u
	}
	u.Calls++
	u.Outcomes[c.Outcome]++
	if c.Outcome != outcomeOK {
		u.Errors++
	}
	s.times[k] = append(s.times[k], float64(c.DurationMS))
}

func (s *toolFigures) result() Tools {
	t := Tools{Tools: []ToolUse{}}
	for k, u := range s.uses {
		u.ErrorRate, u.DurationMS = round(float64(u.Errors)/float64(u.Calls)), latencyOf(s.times[k])
		t.Calls, t.Errors, t.Tools = t.Calls+u.Calls, t.Errors+u.Errors, append(t.Tools, *u)
	}
	slices.SortFunc(t.Tools, func(a, b ToolUse) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.ToolID, b.ToolID), cmp.Compare(a.Operation, b.Operation))
	})
	return t
}

// Tools are the agent's recorded tool calls by tool and operation.
func (s *Service) Tools(ctx context.Context, projectID, botID string, w Window) (Report[Tools], error) {
	return gather(w, newToolFigures, func(each func(ToolCall) error) error {
		return s.repo.ToolCalls(ctx, projectID, botID, w.From, w.To, each)
	}, func(c ToolCall) time.Time { return c.At })
}
