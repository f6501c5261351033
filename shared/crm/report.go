package crm

import (
	"context"
	"math"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Bounds of a report's window.
const (
	DefaultReportWindow = 30 * 24 * time.Hour
	MaxReportWindow     = 366 * 24 * time.Hour
)

// Report is how an agent's CRM went over a window [From, To): deals made, won and lost in it,
// the stages (what they hold now, what entered and left them in the window), the conversion
// from each open stage onwards, and the tasks.
type Report struct {
	From       time.Time          `json:"from"`
	To         time.Time          `json:"to"`
	Deals      ReportDeals        `json:"deals"`
	Stages     []ReportStage      `json:"stages"`
	Conversion []ReportConversion `json:"conversion"`
	Tasks      ReportTasks        `json:"tasks"`
}

// ReportDeals counts the deals made in the window and those won and lost in it (whose move to
// their won or lost stage fell in it), with their values by currency; WinRate is won over won and
// lost, nil when none closed.
type ReportDeals struct {
	Created             int              `json:"created"`
	Won                 int              `json:"won"`
	Lost                int              `json:"lost"`
	WinRate             *float64         `json:"win_rate"`
	WonValueByCurrency  map[string]int64 `json:"won_value_by_currency"`
	LostValueByCurrency map[string]int64 `json:"lost_value_by_currency"`
}

// ReportStage is a stage: the deals it holds now and their values by currency; how many deals
// entered it in the window, how many left it, and their average time in it (nil when none left).
type ReportStage struct {
	Stage
	Status                 string           `json:"status"`
	DealCount              int              `json:"deal_count"`
	ValueByCurrency        map[string]int64 `json:"value_by_currency"`
	Entered                int              `json:"entered"`
	Left                   int              `json:"left"`
	AverageSecondsInStage  *float64         `json:"average_seconds_in_stage"`
	totalSecondsOfLeavings float64
}

// ReportConversion is, of the deals that entered an open stage in the window, how many went on
// (then, or since) to the next stage of its pipeline or one after it, won stages included and lost
// ones not; Rate is their share, nil when none entered.
type ReportConversion struct {
	PipelineID  string   `json:"pipeline_id"`
	FromStageID string   `json:"from_stage_id"`
	FromStage   string   `json:"from_stage"`
	ToStageID   string   `json:"to_stage_id"`
	ToStage     string   `json:"to_stage"`
	Entered     int      `json:"entered"`
	Converted   int      `json:"converted"`
	Rate        *float64 `json:"rate"`
}

// ReportTasks counts the agent's tasks: open now, overdue now (open, not snoozed, due before
// now), and done in the window.
type ReportTasks struct {
	Open    int `json:"open"`
	Overdue int `json:"overdue"`
	Done    int `json:"done"`
}

// ReportQuery is a report's window as a request gives it: RFC 3339 times or dates, the last
// DefaultReportWindow up to now when left out.
type ReportQuery struct {
	From, To string
}

func ratio(n, of int) *float64 {
	if of == 0 {
		return nil
	}
	r := math.Round(float64(n)/float64(of)*10000) / 10000
	return &r
}

func (s *Service) window(q ReportQuery) (time.Time, time.Time, error) {
	var p apperr.Problems
	from, to := parseTime(&p, "from", q.From), parseTime(&p, "to", q.To)
	if err := p.Err(); err != nil {
		return time.Time{}, time.Time{}, err
	}
	if to.IsZero() {
		to = s.now()
	}
	if from.IsZero() {
		from = to.Add(-DefaultReportWindow)
	}
	switch {
	case !from.Before(to):
		return time.Time{}, time.Time{}, apperr.Invalidf("from", "must be before to")
	case to.Sub(from) > MaxReportWindow:
		return time.Time{}, time.Time{}, apperr.Invalidf("from", "must be at most 366 days before to")
	}
	return from, to, nil
}

// Report reports on the agent's CRM over the window q gives. The stages' holdings come from the
// store's sums; the rest from one pass over the agent's deals changed since the window began (a
// deal's stage visits, as it keeps them), read from a cursor.
func (s *Service) Report(ctx context.Context, projectID, botID string, q ReportQuery) (Report, error) {
	from, to, err := s.window(q)
	if err != nil {
		return Report{}, err
	}
	pipelines, err := s.Pipelines(ctx, projectID)
	if err != nil {
		return Report{}, err
	}
	r := Report{From: from, To: to, Stages: []ReportStage{}, Conversion: []ReportConversion{},
		Deals: ReportDeals{WonValueByCurrency: map[string]int64{}, LostValueByCurrency: map[string]int64{}}}
	at := map[string]int{} // stage id -> index in r.Stages
	for _, p := range pipelines {
		for _, st := range p.Stages {
			at[st.UUID] = len(r.Stages)
			r.Stages = append(r.Stages, ReportStage{Stage: st, Status: st.Outcome, ValueByCurrency: map[string]int64{}})
		}
	}
	totals, err := s.repo.DealTotals(ctx, DealFilter{ProjectID: projectID, BotID: botID})
	if err != nil {
		return Report{}, err
	}
	for _, t := range totals {
		if i, ok := at[t.StageID]; ok {
			r.Stages[i].DealCount += t.Count
			r.Stages[i].ValueByCurrency[t.Currency] += t.Value
		}
	}
	conv := newConversion(pipelines)
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	err = s.repo.EachDeal(ctx, projectID, botID, from, func(d *Deal) error {
		if in(d.CreatedAt) {
			r.Deals.Created++
		}
		visits := d.Visits
		if n := len(visits); n == 0 || visits[n-1].StageID != d.StageID {
			// Kept before visits were, or moved by a stage's deletion: in its stage since its
			// last change.
			visits = append(visits, Visit{StageID: d.StageID, EnteredAt: d.UpdatedAt})
		}
		if last := visits[len(visits)-1]; in(last.EnteredAt) {
			switch d.Status {
			case StatusWon:
				r.Deals.Won++
				r.Deals.WonValueByCurrency[d.Currency] += d.Value
			case StatusLost:
				r.Deals.Lost++
				r.Deals.LostValueByCurrency[d.Currency] += d.Value
			}
		}
		for _, v := range visits {
			i, ok := at[v.StageID]
			if !ok {
				continue
			}
			if in(v.EnteredAt) {
				r.Stages[i].Entered++
			}
			if !v.LeftAt.IsZero() && in(v.LeftAt) {
				r.Stages[i].Left++
				r.Stages[i].totalSecondsOfLeavings += v.LeftAt.Sub(v.EnteredAt).Seconds()
			}
		}
		conv.add(visits, in)
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	r.Deals.WinRate = ratio(r.Deals.Won, r.Deals.Won+r.Deals.Lost)
	for i := range r.Stages {
		if st := &r.Stages[i]; st.Left > 0 {
			avg := math.Round(st.totalSecondsOfLeavings / float64(st.Left))
			st.AverageSecondsInStage = &avg
		}
	}
	r.Conversion = conv.list()
	r.Tasks, err = s.reportTasks(ctx, projectID, botID, from, to)
	return r, err
}

// conversion counts, for each open stage, the deals that entered it in the window and those of
// them that reached a later stage of its pipeline that is not a lost one.
type conversion struct {
	steps []ReportConversion
	order map[string]Stage // stage id -> stage
	index map[string]int   // open stage id -> its step
}

func newConversion(pipelines []Pipeline) *conversion {
	c := &conversion{steps: []ReportConversion{}, order: map[string]Stage{}, index: map[string]int{}}
	for _, p := range pipelines {
		for i, st := range p.Stages {
			c.order[st.UUID] = st
			if st.Outcome != StatusOpen || i+1 >= len(p.Stages) {
				continue
			}
			next := p.Stages[i+1]
			c.index[st.UUID] = len(c.steps)
			c.steps = append(c.steps, ReportConversion{PipelineID: p.UUID, FromStageID: st.UUID, FromStage: st.Name, ToStageID: next.UUID, ToStage: next.Name})
		}
	}
	return c
}

// add counts one deal's visits, each open stage once.
func (c *conversion) add(visits []Visit, in func(time.Time) bool) {
	counted := map[string]bool{}
	for i, v := range visits {
		step, ok := c.index[v.StageID]
		if !ok || counted[v.StageID] || !in(v.EnteredAt) {
			continue
		}
		counted[v.StageID] = true
		c.steps[step].Entered++
		from := c.order[v.StageID]
		for _, later := range visits[i+1:] {
			st, ok := c.order[later.StageID]
			if ok && st.PipelineID == from.PipelineID && st.SortOrder > from.SortOrder && st.Outcome != StatusLost {
				c.steps[step].Converted++
				break
			}
		}
	}
}

func (c *conversion) list() []ReportConversion {
	for i := range c.steps {
		c.steps[i].Rate = ratio(c.steps[i].Converted, c.steps[i].Entered)
	}
	return c.steps
}

func (s *Service) reportTasks(ctx context.Context, projectID, botID string, from, to time.Time) (ReportTasks, error) {
	var out ReportTasks
	var err error
	if out.Open, err = s.repo.CountTasks(ctx, TaskFilter{ProjectID: projectID, BotID: botID, Status: TaskOpen}); err != nil {
		return out, err
	}
	overdue, err := s.taskFilter(projectID, botID, TaskQuery{View: ViewOverdue})
	if err != nil {
		return out, err
	}
	if out.Overdue, err = s.repo.CountTasks(ctx, overdue); err != nil {
		return out, err
	}
	out.Done, err = s.repo.CountTasks(ctx, TaskFilter{ProjectID: projectID, BotID: botID, Status: TaskDone, CompletedFrom: from, CompletedBefore: to})
	return out, err
}
