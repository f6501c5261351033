package workflows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/batch"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tasks"
)

// runEvents are the events of workflow runs that ended, about the run.
var runEvents = outbox.Declare[Run](outbox.WorkflowRunSucceeded, outbox.WorkflowRunFailed)

// RunResource names workflow runs in errors and outbox references.
const RunResource = "workflow_run"

// Statuses of a run and of its actions.
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	// RunSkipped is the log of an event that did not start the workflow, its conditions
	// filtering it out; error names the condition that did not hold. It runs nothing, and
	// lists of runs show it only when asked (logs, or status skipped).
	RunSkipped = "skipped"
	// ActionPending and ActionSkipped are statuses of actions only: not run yet, and not run
	// because an earlier action failed.
	ActionPending = "pending"
	ActionSkipped = "skipped"
)

// RunStatuses lists the statuses of a run and of a skipped log.
var RunStatuses = []string{RunQueued, RunRunning, RunSucceeded, RunFailed, RunSkipped}

// Trigger says what started a run.
type Trigger struct {
	// Type is event, schedule or manual.
	Type string `json:"type" bson:"type"`
	// EventID and EventType name the triggering event (event triggers).
	EventID   string `json:"event_id,omitempty" bson:"event_id,omitempty"`
	EventType string `json:"event_type,omitempty" bson:"event_type,omitempty"`
	// Tick is the scheduled time (schedule triggers).
	Tick *time.Time `json:"tick,omitempty" bson:"tick,omitempty"`
	// By names who started a manual run: "api", or "agent:<execution id>".
	By string `json:"by,omitempty" bson:"by,omitempty"`
}

// ActionRun is what became of one action of a run.
type ActionRun struct {
	Index        int        `json:"index" bson:"index"`
	Type         string     `json:"type" bson:"type"`
	Status       string     `json:"status" bson:"status"`
	Attempts     int        `json:"attempts" bson:"attempts"`
	ResponseCode int        `json:"response_code" bson:"response_code"`
	Error        string     `json:"error" bson:"error"`
	Output       string     `json:"output" bson:"output"`
	StartedAt    *time.Time `json:"started_at" bson:"started_at"`
	EndedAt      *time.Time `json:"ended_at" bson:"ended_at"`
}

// Run is one run of a workflow.
type Run struct {
	UUID       string      `json:"uuid" bson:"_id"`
	ProjectID  string      `json:"-" bson:"project_id"`
	BotID      string      `json:"-" bson:"bot_id"`
	WorkflowID string      `json:"workflow_id" bson:"workflow_id"`
	Trigger    Trigger     `json:"trigger" bson:"trigger"`
	Status     string      `json:"status" bson:"status"`
	Error      string      `json:"error" bson:"error"`
	Actions    []ActionRun `json:"actions" bson:"actions"`
	// Envelope is the JSON the run's conditions and templates read: the event, or for manual
	// runs {"type": "manual", "input": ..., ...}.
	Envelope string `json:"-" bson:"envelope"`
	// Cause lists the workflows whose runs led to this run's trigger, oldest first.
	Cause []string `json:"-" bson:"cause,omitempty"`
	// Steps are the workflow's actions when the run started: an update of the workflow does
	// not change a run under way.
	Steps     []Action   `json:"-" bson:"steps"`
	CreatedAt time.Time  `json:"created_at" bson:"created_at"`
	StartedAt *time.Time `json:"started_at" bson:"started_at"`
	EndedAt   *time.Time `json:"ended_at" bson:"ended_at"`
	// Owner is the attempt that holds the run, until LeaseUntil: a run is run by one attempt
	// at a time. Empty when none holds it.
	Owner      string     `json:"-" bson:"owner"`
	LeaseUntil *time.Time `json:"-" bson:"lease_until"`
}

// A Lease is held on a run by one attempt to run it (Owner) until Until, and renewed while the
// attempt goes on.
type Lease struct {
	Owner string
	Until time.Time
}

// RunFilter narrows a list of runs.
type RunFilter struct {
	ProjectID, BotID, WorkflowID, Status string
	// Skipped lists the skipped logs too when Status is empty.
	Skipped bool
}

// RunRepo persists runs.
type RunRepo interface {
	// InsertRun stores a new run: a Conflict when its id exists (the run was started already).
	InsertRun(ctx context.Context, r Run) error
	// Run returns the run of the project's agent: NotFound otherwise.
	Run(ctx context.Context, projectID, botID, id string) (Run, error)
	// LoadRun returns a run by id alone (workers).
	LoadRun(ctx context.Context, id string) (Run, error)
	Runs(ctx context.Context, f RunFilter, page paging.Page) ([]Run, int, error)
	// Claim gives the run a lease when it has not ended and no lease holds it at now, and
	// returns it; false with the run as it is when it cannot (NotFound when there is none).
	Claim(ctx context.Context, id string, l Lease, now time.Time) (Run, bool, error)
	// Renew extends owner's lease to until; false when owner no longer holds the run.
	Renew(ctx context.Context, id, owner string, until time.Time) (bool, error)
	// Release gives owner's lease up.
	Release(ctx context.Context, id, owner string) error
	// SaveRun writes r over the stored run while owner holds it, with ev in its outbox when ev
	// is not nil: ErrLost when owner does not.
	SaveRun(ctx context.Context, r Run, owner string, ev *outbox.Event) error
	// Secret returns the project's webhook signing secret, storing fresh when it has none.
	Secret(ctx context.Context, projectID, fresh string) (string, error)
	// PutSkipped stores skipped logs (status skipped), each over the log of its id, in one
	// command.
	PutSkipped(ctx context.Context, logs []Run) error
}

// Runs starts workflow runs and reads their history (the API side).
type Runs struct {
	workflows *Service
	// bots, when set, are read for the versioned agents' published workflows (UseAgents).
	bots  Agents
	repo  RunRepo
	queue tasks.Queue
	log   *slog.Logger
	now   func() time.Time
	// skips stores the skipped logs off the path of the events, in batches.
	skips *batch.Batcher[Run]
}

// NewRuns returns the runs service; log tells of the triggers it does not follow.
func NewRuns(workflows *Service, repo RunRepo, queue tasks.Queue, log *slog.Logger) *Runs {
	s := &Runs{workflows: workflows, repo: repo, queue: queue, log: log, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
	s.skips = batch.New(s.writeSkipped)
	return s
}

// runNamespace derives run ids from what triggered them, so a trigger starts one run.
var runNamespace = uuid.MustParse("8d6f2c1e-4b3a-4f5d-9e7c-1a2b3c4d5e6f")

// MaxInputBytes bounds the input of a manual run.
const MaxInputBytes = 64 << 10

// RunManually starts a run of the agent's workflow with input (a JSON object or nil), as by.
// key, when not empty, makes the call idempotent: the same key starts one run. The workflow
// must be active.
func (s *Runs) RunManually(ctx context.Context, projectID, botID, workflowID string, input map[string]any, by, key string) (Run, error) {
	w, err := s.workflows.Get(ctx, projectID, botID, strings.TrimSpace(workflowID))
	if err != nil {
		return Run{}, err
	}
	return s.runManually(ctx, w, input, by, key)
}

// RunAt is RunManually of the agent's workflow as set, the workflows of a version of the agent,
// has it: its form under the version's revision, read through the revisions' cache. NotFound
// when set has no such workflow. A nil set (an agent whose workflows no version recorded, or
// whose runs take its workflows as they are) runs the workflow as it is.
func (s *Runs) RunAt(ctx context.Context, projectID, botID string, set []agents.WorkflowState, workflowID string, input map[string]any, by, key string) (Run, error) {
	if set == nil {
		return s.RunManually(ctx, projectID, botID, workflowID, input, by, key)
	}
	i := slices.IndexFunc(set, func(st agents.WorkflowState) bool { return st.ID == strings.TrimSpace(workflowID) })
	if i < 0 {
		return Run{}, apperr.NotFoundf(Resource)
	}
	w, err := s.workflows.repo.Revision(ctx, projectID, botID, set[i].Revision)
	if err != nil {
		return Run{}, err
	}
	return s.runManually(ctx, w, input, by, key)
}

// runManually starts a run of w, which must be active, as RunManually says.
func (s *Runs) runManually(ctx context.Context, w Workflow, input map[string]any, by, key string) (Run, error) {
	projectID := w.ProjectID
	if !w.IsActive {
		return Run{}, apperr.New(apperr.Conflict, "workflow_inactive", "The workflow is inactive (is_active false); activate it to run it.")
	}
	if input == nil {
		input = map[string]any{}
	}
	id := ids.New()
	if key != "" {
		id = uuid.NewSHA1(runNamespace, []byte(projectID+"/manual/"+w.UUID+"/"+key)).String()
	}
	now := s.now()
	if raw, err := json.Marshal(input); err != nil || len(raw) > MaxInputBytes {
		return Run{}, apperr.Invalidf("input", "must be a JSON object of at most %d bytes", MaxInputBytes)
	}
	envelope, err := json.Marshal(map[string]any{"id": id, "type": TriggerTypeManual, "project_id": projectID, "bot_id": w.BotID,
		"occurred_at": now, "workflow_id": w.UUID, "input": input, "data": input})
	if err != nil {
		return Run{}, err
	}
	r, _, err := s.start(ctx, w, Trigger{Type: TriggerTypeManual, By: by}, id, string(envelope), nil, nil)
	return r, err
}

// start stores the run of w (queued, one pending entry per action), caused by the runs of the
// workflows cause, and queues it; a run of that id stored already is queued again and returned.
// With hold, a new run is stored held by that lease and its task held back until the lease
// ends; it reports whether the run is new and so held.
func (s *Runs) start(ctx context.Context, w Workflow, t Trigger, id, envelope string, cause []string, hold *Lease) (Run, bool, error) {
	r := Run{UUID: id, ProjectID: w.ProjectID, BotID: w.BotID, WorkflowID: w.UUID, Trigger: t, Status: RunQueued, Cause: cause,
		Envelope: envelope, CreatedAt: s.now(), Actions: make([]ActionRun, len(w.Actions)), Steps: w.Actions}
	for i, a := range w.Actions {
		r.Actions[i] = ActionRun{Index: i, Type: a.Type, Status: ActionPending}
	}
	task := tasks.NewWorkflowRunTask(r.UUID)
	if hold != nil {
		r.Owner, r.LeaseUntil = hold.Owner, &hold.Until
		task.After = hold.Until.Sub(r.CreatedAt)
	}
	if err := s.repo.InsertRun(ctx, r); err != nil {
		if apperr.As(err).Kind != apperr.Conflict {
			return Run{}, false, err
		}
		if r, err = s.repo.LoadRun(ctx, id); err != nil {
			return Run{}, false, err
		}
		hold, task.After = nil, 0
	}
	return r, hold != nil, s.queue.Enqueue(ctx, task)
}

// Forget removes the task of the run, which its holder ended: nothing is left for it to do.
func (s *Runs) Forget(ctx context.Context, r Run) error {
	return s.queue.Forget(ctx, tasks.NewWorkflowRunTask(r.UUID))
}

// Run returns a run of the agent.
func (s *Runs) Run(ctx context.Context, projectID, botID, id string) (Run, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Run{}, apperr.Invalidf("run_id", "is required")
	}
	return s.repo.Run(ctx, projectID, botID, id)
}

// List returns one page of the agent's runs, the newest first, by workflow and status when
// they are given; with skipped, the skipped logs among them.
func (s *Runs) List(ctx context.Context, projectID, botID, workflowID, status string, skipped bool, page paging.Page) ([]Run, int, error) {
	if status != "" && !slices.Contains(RunStatuses, status) {
		return nil, 0, apperr.Invalidf("status", "must be one of %s", strings.Join(RunStatuses, ", "))
	}
	return s.repo.Runs(ctx, RunFilter{ProjectID: projectID, BotID: botID, WorkflowID: strings.TrimSpace(workflowID), Status: status, Skipped: skipped}, page)
}

// SigningSecret returns the project's webhook signing secret, made on first use.
func (s *Runs) SigningSecret(ctx context.Context, projectID string) (string, error) {
	return s.repo.Secret(ctx, projectID, newSecret())
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

// runEvent is the outbox event of a run that ended.
func runEvent(ctx context.Context, r Run) outbox.Event {
	typ := outbox.WorkflowRunSucceeded
	if r.Status == RunFailed {
		typ = outbox.WorkflowRunFailed
	}
	return runEvents.New(ctx, typ, r.ProjectID, r.BotID, r)
}

// errorText is an error as a run records it.
func errorText(err error) string {
	if e := apperr.As(err); e.Kind != apperr.Internal {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return err.Error()
}
