package stats

import "context"

// Reasoning is how the agent reasoned: its answers by reasoning mode.
type Reasoning struct {
	// Modes counts the agent's answers by their reasoning_type (standard, agent, ...).
	Modes map[string]int `json:"modes"`
	// Credits sums the answers' credit_used by reasoning_type.
	Credits map[string]float64 `json:"credits_used"`
	// Runs are the agent runs (reasoning_mode agent) of the window and their cycles.
	Runs Runs `json:"agent_runs"`
}

type reasoning struct{ r Reasoning }

func newReasoning() *reasoning {
	return &reasoning{r: Reasoning{Modes: map[string]int{}, Credits: map[string]float64{}}}
}

func (s *reasoning) add(h Hourly) {
	for mode, n := range h.Modes {
		s.r.Modes[mode] += n
	}
	for mode, c := range h.ModeCredits {
		s.r.Credits[mode] += c
	}
}

func (s *reasoning) result() Reasoning {
	for k, v := range s.r.Credits {
		s.r.Credits[k] = round(v)
	}
	return s.r
}

// Reasoning is the agent's answers by reasoning mode and its agent runs' cycles.
func (s *Service) Reasoning(ctx context.Context, projectID, botID string, w Window) (Report[Reasoning], error) {
	r, err := hours(ctx, s, projectID, botID, w, newReasoning)
	if err != nil {
		return r, err
	}
	return r, withRuns(ctx, s, projectID, botID, &r, func(t *Reasoning) *Runs { return &t.Runs })
}

// withRuns sets the agent runs of r's window, and of each of its buckets, in the Runs of r's
// figures that runs points at.
func withRuns[T any](ctx context.Context, s *Service, projectID, botID string, r *Report[T], runs func(*T) *Runs) error {
	got, err := s.agentRuns(ctx, projectID, botID, r.Window)
	if err != nil {
		return err
	}
	*runs(&r.Stats) = got.Stats
	for i := range r.Series {
		*runs(&r.Series[i].Stats) = got.Series[i].Stats
	}
	return nil
}

// Dashboard is the summary, votes, performance and reasoning of one read.
type Dashboard struct {
	Summary     Totals      `json:"summary"`
	Votes       Votes       `json:"votes"`
	Performance Performance `json:"performance"`
	Reasoning   Reasoning   `json:"reasoning"`
}

type dashboard struct {
	t *totals
	v *votes
	p *performance
	r *reasoning
}

func newDashboard() *dashboard {
	return &dashboard{t: newTotals(), v: newVotes(), p: newPerformance(), r: newReasoning()}
}

func (s *dashboard) add(h Hourly) {
	s.t.add(h)
	s.v.add(h)
	s.p.add(h)
	s.r.add(h)
}

func (s *dashboard) result() Dashboard {
	return Dashboard{Summary: s.t.result(), Votes: s.v.result(), Performance: s.p.result(), Reasoning: s.r.result()}
}

// Dashboard is the agent's summary, votes, performance and reasoning, from one read of its
// hours and one of its agent runs.
func (s *Service) Dashboard(ctx context.Context, projectID, botID string, w Window) (Report[Dashboard], error) {
	r, err := hours(ctx, s, projectID, botID, w, newDashboard)
	if err != nil {
		return r, err
	}
	return r, withRuns(ctx, s, projectID, botID, &r, func(d *Dashboard) *Runs { return &d.Reasoning.Runs })
}
