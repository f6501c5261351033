package evals

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tasks"
)

// RunResource names eval runs in errors.
const RunResource = "eval_run"

// Statuses of an eval run.
const (
	RunQueued  = "queued"
	RunRunning = "running"
	RunDone    = "succeeded"
)

// Run is a dataset asked of one version of an agent, every answer graded. Graders, Passed,
// Tokens and Cost are set when the run is done.
type Run struct {
	UUID      string `json:"uuid" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"-" bson:"bot_id"`
	DatasetID string `json:"dataset_id" bson:"dataset_id"`
	// Version is the number of the agent's version the run asks.
	Version int `json:"version" bson:"version"`
	// Thresholds are the pass rates (0 to 1) the run's graders must reach for it to pass.
	Thresholds map[string]float64 `json:"thresholds" bson:"thresholds"`
	Status     string             `json:"status" bson:"status"`
	CaseCount  int                `json:"case_count" bson:"case_count"`
	Graders    []GraderRate       `json:"graders" bson:"graders"`
	// Passed says every grader with a threshold reached it (set when the run is done).
	Passed     *bool      `json:"passed" bson:"passed"`
	Tokens     int        `json:"tokens" bson:"tokens"`
	Cost       float64    `json:"cost" bson:"cost"`
	CreatedAt  time.Time  `json:"created_at" bson:"created_at"`
	FinishedAt *time.Time `json:"finished_at" bson:"finished_at"`
	// Task is the id of the task last queued for the run (the run's own id at first, then the
	// reconciler's): Requeue waits while the queue holds it.
	Task string `json:"-" bson:"task"`
}

// GraderRate is how one grader judged a run's answers: how many cases it graded, passed and
// could not judge (Errors, counted as not passed), its pass rate, and its threshold when the
// run set one.
type GraderRate struct {
	Grader    string   `json:"grader" bson:"grader"`
	Graded    int      `json:"graded" bson:"graded"`
	Passed    int      `json:"passed" bson:"passed"`
	Errors    int      `json:"errors" bson:"errors"`
	PassRate  float64  `json:"pass_rate" bson:"pass_rate"`
	Threshold *float64 `json:"threshold,omitempty" bson:"threshold,omitempty"`
	Met       bool     `json:"met" bson:"met"`
}

// Result is one case of a run: claimed by a worker under a lease, answered and graded once.
type Result struct {
	ID    string `json:"-" bson:"_id"`
	RunID string `json:"-" bson:"run_id"`
	Index int    `json:"index" bson:"index"`
	Case  Case   `json:"case" bson:"case"`
	Done  bool   `json:"-" bson:"done"`
	// Owner holds the case until LeaseUntil.
	Owner      string     `json:"-" bson:"owner"`
	LeaseUntil time.Time  `json:"-" bson:"lease_until"`
	Answer     string     `json:"answer" bson:"answer"`
	Sources    []Source   `json:"sources" bson:"sources"`
	ToolCalls  []ToolCall `json:"tool_calls" bson:"tool_calls"`
	Grades     []Grade    `json:"grades" bson:"grades"`
	Tokens     int        `json:"tokens" bson:"tokens"`
	Cost       float64    `json:"cost" bson:"cost"`
	LatencyMS  int64      `json:"latency_ms" bson:"latency_ms"`
	// Answered says Answer and the fields after it are the agent's answer, kept when its case
	// was given back before its grading was over (the judge's provider down): the case taken
	// again is graded on it, not answered (and paid for) anew.
	Answered bool `json:"-" bson:"answered"`
	// Error is why the agent gave no answer (its grades then all fail).
	Error    string    `json:"error,omitempty" bson:"error,omitempty"`
	GradedAt time.Time `json:"graded_at" bson:"graded_at"`
}

// resultID names the index-th case of run.
func resultID(run string, index int) string { return fmt.Sprintf("%s/%04d", run, index) }

// RunInput is a run to start: a dataset of the agent, the version asked (resolved by the
// caller) and the graders' thresholds.
type RunInput struct {
	DatasetID  string             `json:"dataset_id"`
	Thresholds map[string]float64 `json:"thresholds"`
}

// RunRepo stores runs and their cases.
type RunRepo interface {
	// InsertRun stores the run and its cases.
	InsertRun(ctx context.Context, r Run, cases []Result) error
	// Run returns the agent's run: NotFound for another agent's.
	Run(ctx context.Context, projectID, botID, id string) (Run, error)
	// FindRun returns a run by its id alone (the workers').
	FindRun(ctx context.Context, id string) (Run, error)
	// Runs is a page of the agent's runs, newest first.
	Runs(ctx context.Context, projectID, botID string, page paging.Page) ([]Run, int, error)
	// LatestRun is the agent's newest done run of the dataset at version: NotFound when none.
	LatestRun(ctx context.Context, projectID, botID, datasetID string, version int) (Run, error)
	// SetStatus sets the run's status when it is from.
	SetStatus(ctx context.Context, id, from, to string) error
	// Finish stores r's outcome, once: a run done already is left as it is.
	Finish(ctx context.Context, r Run) error
	// Claim takes a case of the run not graded and not held (or held under an expired lease)
	// for owner until until; ok is false when there is none.
	Claim(ctx context.Context, runID, owner string, until, now time.Time) (r Result, ok bool, err error)
	// Release gives up owner's hold of the case r, not graded, keeping its answer when it has
	// one (Answered).
	Release(ctx context.Context, r Result, owner string) error
	// Grade stores r's answer and grades, when owner still holds it and it is not graded;
	// false otherwise (nothing is written).
	Grade(ctx context.Context, r Result, owner string) (bool, error)
	// Results are the run's cases, in their order.
	Results(ctx context.Context, runID string) ([]Result, error)
	// ResultsPage is one page of the run's cases, in their order.
	ResultsPage(ctx context.Context, runID string, page paging.Page) ([]Result, error)
	// Ungraded counts the run's cases not graded yet.
	Ungraded(ctx context.Context, runID string) (int, error)
	// Unfinished are up to limit runs queued or running, created before before, oldest first.
	Unfinished(ctx context.Context, before time.Time, limit int) ([]Run, error)
	// SetTask records task as the run's task when from is; false when it is not (another
	// scheduler queued one).
	SetTask(ctx context.Context, id, from, task string) (bool, error)
}

// Runs keeps agents' eval runs: started by the API, carried out by workers (Runner).
type Runs struct {
	repo     RunRepo
	datasets Repo
	queue    tasks.Tracker
	log      *slog.Logger
	now      func() time.Time
}

// NewRuns returns the eval runs' service.
func NewRuns(repo RunRepo, datasets Repo, queue tasks.Tracker, log *slog.Logger) *Runs {
	return &Runs{repo: repo, datasets: datasets, queue: queue, log: log, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// checkThresholds checks that each threshold names a grader and is a rate from 0 to 1.
func checkThresholds(field string, t map[string]float64) error {
	var p apperr.Problems
	for name, v := range t {
		if !slices.Contains(GraderNames, name) {
			p.Add(field+"."+name, "is not a grader: one of %s", strings.Join(GraderNames, ", "))
		} else if v < 0 || v > 1 {
			p.Add(field+"."+name, "must be a pass rate from 0 to 1")
		}
	}
	return p.Err()
}

// CheckThresholds checks a publish gate's thresholds (field names them in errors).
func CheckThresholds(field string, t map[string]float64) error { return checkThresholds(field, t) }

// Start stores a run of the agent's dataset at its version, a case for each of the dataset's,
// and queues it for the workers.
func (s *Runs) Start(ctx context.Context, projectID, botID string, version int, in RunInput) (Run, error) {
	if strings.TrimSpace(in.DatasetID) == "" {
		return Run{}, apperr.Invalidf("dataset_id", "is required")
	}
	if err := checkThresholds("thresholds", in.Thresholds); err != nil {
		return Run{}, err
	}
	d, err := s.datasets.Get(ctx, projectID, botID, strings.TrimSpace(in.DatasetID))
	if err != nil {
		return Run{}, err
	}
	r := Run{UUID: ids.New(), ProjectID: projectID, BotID: botID, DatasetID: d.UUID, Version: version, Thresholds: in.Thresholds,
		Status: RunQueued, CaseCount: len(d.Cases), Graders: []GraderRate{}, CreatedAt: s.now()}
	r.Task = tasks.NewEvalRunTask(r.UUID).ID
	if r.Thresholds == nil {
		r.Thresholds = map[string]float64{}
	}
	cases := make([]Result, len(d.Cases))
	for i, c := range d.Cases {
		cases[i] = Result{ID: resultID(r.UUID, i), RunID: r.UUID, Index: i, Case: c}
	}
	if err := s.repo.InsertRun(ctx, r, cases); err != nil {
		return Run{}, err
	}
	return r, s.queue.Enqueue(ctx, tasks.NewEvalRunTask(r.UUID))
}

// staleAfter is how long a run may be unfinished before the reconciler looks at its task.
const staleAfter = time.Minute

// requeueBatch bounds the runs one pass of the reconciler looks at.
const requeueBatch = 500

// Requeue queues again the runs whose task is gone: a run queued or running for a minute whose
// task the queue no longer holds (lost with Redis, or given up after its retries) gets a new
// one, of the run and the minute, recorded on the run so that the next pass waits for it (a
// task retrying with its back-off, the provider down, is left to it). Whichever tasks take a
// run, its cases' leases grade each once. It returns how many runs were queued again.
func (s *Runs) Requeue(ctx context.Context, now time.Time) (int, error) {
	runs, err := s.repo.Unfinished(ctx, now.Add(-staleAfter), requeueBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range runs {
		task := cmp.Or(r.Task, tasks.NewEvalRunTask(r.UUID).ID)
		live, err := s.queue.Live(ctx, tasks.Task{Type: tasks.TypeEvalRun, ID: task})
		if err != nil {
			return n, err
		}
		if live {
			continue
		}
		next := tasks.NewEvalRunRequeueTask(r.UUID, now)
		ok, err := s.repo.SetTask(ctx, r.UUID, r.Task, next.ID)
		if err != nil {
			return n, err
		}
		if !ok {
			continue
		}
		if err := s.queue.Enqueue(ctx, next); err != nil {
			return n, err
		}
		n++
	}
	if n > 0 {
		s.log.Info("eval runs queued again", "count", n)
	}
	return n, nil
}

// Get is a run of the agent.
func (s *Runs) Get(ctx context.Context, projectID, botID, id string) (Run, error) {
	if strings.TrimSpace(id) == "" {
		return Run{}, apperr.Invalidf("run_id", "is required")
	}
	return s.repo.Run(ctx, projectID, botID, strings.TrimSpace(id))
}

// List is a page of the agent's runs, newest first.
func (s *Runs) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Run, int, error) {
	return s.repo.Runs(ctx, projectID, botID, page)
}

// Report is a run with its cases, and the cases whose grades changed from a baseline run.
type Report struct {
	Run Run `json:"run"`
	// Results are one page of the run's cases; Total is how many it has.
	Results []Result `json:"results"`
	Total   int      `json:"total"`
	// Changed is given when the report is against a baseline.
	Changed []Change `json:"changed,omitempty"`
}

// Change is a case whose grades differ from the baseline run's: the graders that now pass
// (Fixed) and now fail (Broken).
type Change struct {
	Index    int      `json:"index"`
	Input    string   `json:"input"`
	Fixed    []string `json:"fixed"`
	Broken   []string `json:"broken"`
	Answer   string   `json:"answer"`
	Baseline string   `json:"baseline_answer"`
}

// Read is the agent's run with one page of its cases; with a baseline (another run of the
// agent on the same dataset), every case whose grades changed from it (both runs' cases are
// read whole for that, at most MaxCases each).
func (s *Runs) Read(ctx context.Context, projectID, botID, id, baseline string, page paging.Page) (Report, error) {
	r, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Run: r, Total: r.CaseCount}
	if baseline = strings.TrimSpace(baseline); baseline == "" {
		rep.Results, err = s.repo.ResultsPage(ctx, r.UUID, page)
		return rep, err
	}
	base, err := s.repo.Run(ctx, projectID, botID, baseline)
	if err != nil {
		return Report{}, err
	}
	if base.DatasetID != r.DatasetID {
		return Report{}, apperr.Invalidf("baseline", "is a run of another dataset")
	}
	results, err := s.repo.Results(ctx, r.UUID)
	if err != nil {
		return Report{}, err
	}
	before, err := s.repo.Results(ctx, base.UUID)
	if err != nil {
		return Report{}, err
	}
	rep.Changed = changes(before, results)
	from := min(int(page.Skip()), len(results))
	rep.Results = results[from:min(from+page.PerPage, len(results))]
	return rep, nil
}

// changes are the cases of after whose grades differ from the same case's in before.
func changes(before, after []Result) []Change {
	out := []Change{}
	for _, a := range after {
		if a.Index >= len(before) || !before[a.Index].Done || !a.Done {
			continue
		}
		b := before[a.Index]
		was := map[string]bool{}
		for _, g := range b.Grades {
			was[g.Grader] = g.Pass
		}
		c := Change{Index: a.Index, Input: a.Case.Question(), Fixed: []string{}, Broken: []string{}, Answer: a.Answer, Baseline: b.Answer}
		for _, g := range a.Grades {
			prev, ok := was[g.Grader]
			switch {
			case !ok:
			case g.Pass && !prev:
				c.Fixed = append(c.Fixed, g.Grader)
			case !g.Pass && prev:
				c.Broken = append(c.Broken, g.Grader)
			}
		}
		if len(c.Fixed)+len(c.Broken) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// rates are the per-grader outcome of a run's graded cases against its thresholds, in
// GraderNames order, and whether every threshold was met.
func rates(results []Result, thresholds map[string]float64) ([]GraderRate, bool) {
	by := map[string]*GraderRate{}
	for _, r := range results {
		for _, g := range r.Grades {
			gr := by[g.Grader]
			if gr == nil {
				gr = &GraderRate{Grader: g.Grader}
				by[g.Grader] = gr
			}
			gr.Graded++
			if g.Pass {
				gr.Passed++
			}
			if g.Error {
				gr.Errors++
			}
		}
	}
	out := []GraderRate{}
	passed := true
	for _, name := range GraderNames {
		gr, ok := by[name]
		t, has := thresholds[name]
		if !ok && !has {
			continue
		}
		if !ok {
			gr = &GraderRate{Grader: name}
		}
		if gr.Graded > 0 {
			gr.PassRate = float64(gr.Passed) / float64(gr.Graded)
		}
		gr.Met = true
		if has {
			gr.Threshold = &t
			gr.Met = gr.Graded > 0 && gr.PassRate >= t
			passed = passed && gr.Met
		}
		out = append(out, *gr)
	}
	return out, passed
}

// Question is the end user's message the case asks: its input, or its conversation's last.
func (c Case) Question() string {
	if len(c.Conversation) > 0 {
		return c.Conversation[len(c.Conversation)-1].Content
	}
	return c.Input
}
