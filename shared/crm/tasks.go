package crm

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// TaskResource names tasks in errors and outbox references.
const TaskResource = "task"

// Task statuses and priorities.
const (
	TaskOpen       = "open"
	TaskDone       = "done"
	PriorityLow    = "low"
	PriorityNormal = "normal"
	PriorityHigh   = "high"
)

// Task views: which open tasks a list shows.
const (
	ViewToday    = "today"
	ViewUpcoming = "upcoming"
	ViewOverdue  = "overdue"
	ViewSnoozed  = "snoozed"
)

// Bounds of a task.
const (
	MaxTaskDescriptionLength = 10000
	MaxAssigneeLength        = 200
	// DefaultSnooze is how long a snooze without an end lasts.
	DefaultSnooze = 24 * time.Hour
)

var (
	taskStatuses   = []string{TaskOpen, TaskDone}
	taskPriorities = []string{PriorityLow, PriorityNormal, PriorityHigh}
	taskViews      = []string{ViewToday, ViewUpcoming, ViewOverdue, ViewSnoozed}
	// minTime and maxTime bound due and snooze times: a zero time means none.
	minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// taskEvents are the events of tasks, about the task.
var taskEvents = outbox.Declare[Task](outbox.TaskCreated, outbox.TaskUpdated, outbox.TaskDeleted, outbox.TaskDue)

// Task is a thing to do for an agent's CRM: a call to make, a proposal to send, linked to a
// contact or a deal of the project. Its times are zero when unset.
type Task struct {
	UUID        string `bson:"_id"`
	ProjectID   string `bson:"project_id"`
	BotID       string `bson:"bot_id"`
	Title       string `bson:"title"`
	Description string `bson:"description"`
	Status      string `bson:"status"`
	Priority    string `bson:"priority"`
	ContactID   string `bson:"contact_id"`
	DealID      string `bson:"deal_id"`
	Assignee    string `bson:"assignee"`
	// AssigneeOperatorID is the operator the assignee names, when it names one.
	AssigneeOperatorID string    `bson:"assignee_operator_id"`
	DueAt              time.Time `bson:"due_at"`
	SnoozedUntil       time.Time `bson:"snoozed_until"`
	CompletedAt        time.Time `bson:"completed_at"`
	CreatedAt          time.Time `bson:"created_at"`
	UpdatedAt          time.Time `bson:"updated_at"`
	Rev                int64     `bson:"rev"`
	// NoticeAt is when the task's task.due event is to be sent (its due time, or the end of its
	// snooze when later); zero when none is to be: the task is done, has no due time, or
	// NoticedDue, the due time of the last event sent, is its due time.
	NoticeAt   time.Time `bson:"notice_at"`
	NoticedDue time.Time `bson:"noticed_due"`
}

// plan sets when the task's task.due event is to be sent.
func (t *Task) plan() {
	t.NoticeAt = time.Time{}
	if t.Status == TaskOpen && !t.DueAt.IsZero() && !t.NoticedDue.Equal(t.DueAt) {
		t.NoticeAt = t.DueAt
		if t.SnoozedUntil.After(t.DueAt) {
			t.NoticeAt = t.SnoozedUntil
		}
	}
}

// optTime is t, or nil when it is zero.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// MarshalJSON shows the task as the interface has it: unset times as null.
func (t Task) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		UUID               string     `json:"uuid"`
		BotID              string     `json:"bot_id"`
		Title              string     `json:"title"`
		Description        string     `json:"description"`
		Status             string     `json:"status"`
		Priority           string     `json:"priority"`
		ContactID          string     `json:"contact_id"`
		DealID             string     `json:"deal_id"`
		Assignee           string     `json:"assignee"`
		AssigneeOperatorID string     `json:"assignee_operator_id"`
		DueAt              *time.Time `json:"due_at"`
		SnoozedUntil       *time.Time `json:"snoozed_until"`
		CompletedAt        *time.Time `json:"completed_at"`
		CreatedAt          time.Time  `json:"created_at"`
		UpdatedAt          time.Time  `json:"updated_at"`
	}{t.UUID, t.BotID, t.Title, t.Description, t.Status, t.Priority, t.ContactID, t.DealID, t.Assignee, t.AssigneeOperatorID,
		optTime(t.DueAt), optTime(t.SnoozedUntil), optTime(t.CompletedAt), t.CreatedAt, t.UpdatedAt})
}

// TaskInput is the body of a task's creation or update: fields absent or null keep their value
// (or default on creation); an empty due_at, contact_id, deal_id or assignee removes it.
type TaskInput struct {
	Title       *string `json:"title"`
	Description *string `json:"description"`
	Status      *string `json:"status"`
	Priority    *string `json:"priority"`
	// DueAt is an RFC 3339 time, or a date (YYYY-MM-DD: its start, in UTC).
	DueAt     *string `json:"due_at"`
	ContactID *string `json:"contact_id"`
	DealID    *string `json:"deal_id"`
	Assignee  *string `json:"assignee"`
	// AssigneeOperatorID is set by the caller when Assignee names an operator who works in the
	// project (never from a body).
	AssigneeOperatorID string `json:"-"`
}

// TaskFilter narrows a task list: by status, and by view at now, in loc.
type TaskFilter struct {
	ProjectID, BotID string
	Status           string
	// DueFrom and DueBefore bound the due time (zero: unbounded); Snoozed selects the tasks
	// snoozed past Now, else those not snoozed (when Now is set).
	DueFrom, DueBefore time.Time
	Snoozed            bool
	Now                time.Time
	// ByDue orders the list by due time (then id), else by id.
	ByDue bool
	// CompletedFrom and CompletedBefore select the tasks done in that window (when
	// CompletedBefore is set).
	CompletedFrom, CompletedBefore time.Time
}

// TaskQuery is a task list as a request asks for it.
type TaskQuery struct {
	Status, View, Timezone string
}

// parseTime reads an RFC 3339 time or a date, bounded to minTime..maxTime.
func parseTime(p *apperr.Problems, field, v string) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t, err = time.Parse(time.DateOnly, v)
	}
	if err != nil || t.Before(minTime) || t.After(maxTime) {
		p.Add(field, "must be an RFC 3339 time such as 2026-05-01T09:00:00Z or a date such as 2026-05-01, between the years 2000 and 9999")
		return time.Time{}
	}
	return t.UTC().Truncate(time.Millisecond)
}

// oneOf checks that the value *v, lower-cased, is one of allowed, and stores it so.
func oneOf(p *apperr.Problems, field string, v *string, allowed []string) {
	if v == nil {
		return
	}
	s := strings.ToLower(strings.TrimSpace(*v))
	if !slices.Contains(allowed, s) {
		p.Add(field, "must be one of %s", strings.Join(allowed, ", "))
	}
	*v = s
}

// apply validates in and applies it to t.
func (in TaskInput) apply(t *Task, creating bool) error {
	var p apperr.Problems
	if in.Title != nil || creating {
		title := trimmed(in.Title)
		switch {
		case title == "":
			p.Add("title", "is required")
		case utf8.RuneCountInString(title) > MaxTitleLength:
			p.Add("title", "must be at most %d characters", MaxTitleLength)
		}
		t.Title = title
	}
	if in.Description != nil {
		if t.Description = strings.TrimSpace(*in.Description); utf8.RuneCountInString(t.Description) > MaxTaskDescriptionLength {
			p.Add("description", "must be at most %d characters", MaxTaskDescriptionLength)
		}
	}
	if trimmed(in.Status) == "" {
		in.Status = nil
	}
	oneOf(&p, "status", in.Status, taskStatuses)
	if in.Status != nil {
		t.Status = *in.Status
	}
	if trimmed(in.Priority) == "" {
		in.Priority = nil
	}
	oneOf(&p, "priority", in.Priority, taskPriorities)
	if in.Priority != nil {
		t.Priority = *in.Priority
	}
	if in.DueAt != nil {
		t.DueAt = parseTime(&p, "due_at", *in.DueAt)
	}
	if in.Assignee != nil {
		if t.Assignee = strings.TrimSpace(*in.Assignee); utf8.RuneCountInString(t.Assignee) > MaxAssigneeLength {
			p.Add("assignee", "must be at most %d characters", MaxAssigneeLength)
		}
		t.AssigneeOperatorID = in.AssigneeOperatorID
	}
	return p.Err()
}

// linkTask sets the task's contact and deal from in: each must be one of the agent's (the
// project's contacts, the agent's deals), else the field is refused.
func (s *Service) linkTask(ctx context.Context, t *Task, in TaskInput) error {
	var p apperr.Problems
	if in.ContactID != nil {
		if id := strings.TrimSpace(*in.ContactID); id == "" {
			t.ContactID = ""
		} else if c, err := s.repo.Contact(ctx, t.ProjectID, id); apperr.IsNotFound(err) {
			p.Add("contact_id", "must be the uuid of a contact of the agent's CRM")
		} else if err != nil {
			return err
		} else {
			t.ContactID = c.UUID
		}
	}
	if in.DealID != nil {
		if id := strings.TrimSpace(*in.DealID); id == "" {
			t.DealID = ""
		} else if d, err := s.repo.Deal(ctx, t.ProjectID, t.BotID, id); apperr.IsNotFound(err) {
			p.Add("deal_id", "must be the uuid of a deal of the agent")
		} else if err != nil {
			return err
		} else {
			t.DealID = d.UUID
		}
	}
	return p.Err()
}

// CreateTask adds a task for the agent botID.
func (s *Service) CreateTask(ctx context.Context, projectID, botID string, in TaskInput) (Task, error) {
	return s.createTask(ctx, projectID, botID, in, ids.New())
}

// CreateTaskOnce creates a task once per idempotency key: called again with the same key (an
// agent's step redone after a crash) it returns the task the first call created.
func (s *Service) CreateTaskOnce(ctx context.Context, projectID, botID string, in TaskInput, key string) (Task, error) {
	id := uuid.NewSHA1(opNamespace, []byte(projectID+"/task/"+key)).String()
	t, err := s.createTask(ctx, projectID, botID, in, id)
	if apperr.As(err).Kind == apperr.Conflict {
		return s.repo.Task(ctx, projectID, botID, id)
	}
	return t, err
}

func (s *Service) createTask(ctx context.Context, projectID, botID string, in TaskInput, id string) (Task, error) {
	now := s.now()
	t := Task{UUID: id, ProjectID: projectID, BotID: botID, Status: TaskOpen, Priority: PriorityNormal, CreatedAt: now, UpdatedAt: now, Rev: 1}
	if err := in.apply(&t, true); err != nil {
		return Task{}, err
	}
	if err := s.linkTask(ctx, &t, in); err != nil {
		return Task{}, err
	}
	if t.Status == TaskDone {
		t.CompletedAt = now
	}
	t.plan()
	ev := taskEvents.New(ctx, outbox.TaskCreated, projectID, botID, t)
	if err := s.repo.InsertTask(ctx, t, ev); err != nil {
		return Task{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: TaskResource, ID: t.UUID}, ev)
	return t, nil
}

// UpdateTask applies in to a task of the agent. A task done is no longer snoozed; one reopened
// loses its completion time.
func (s *Service) UpdateTask(ctx context.Context, projectID, botID, id string, in TaskInput) (Task, error) {
	return s.changeTask(ctx, projectID, botID, id, func(t *Task) error {
		was := t.Status
		if err := in.apply(t, false); err != nil {
			return err
		}
		if err := s.linkTask(ctx, t, in); err != nil {
			return err
		}
		switch {
		case t.Status == TaskDone && was != TaskDone:
			t.CompletedAt, t.SnoozedUntil = t.UpdatedAt, time.Time{}
		case t.Status == TaskOpen:
			t.CompletedAt = time.Time{}
		}
		return nil
	})
}

// CompleteTask marks a task of the agent done; a task done already is returned as it is.
func (s *Service) CompleteTask(ctx context.Context, projectID, botID, id string) (Task, error) {
	t, err := s.repo.Task(ctx, projectID, botID, strings.TrimSpace(id))
	if err != nil || t.Status == TaskDone {
		return t, err
	}
	done := TaskDone
	return s.UpdateTask(ctx, projectID, botID, id, TaskInput{Status: &done})
}

// SnoozeTask hides an open task from the today, upcoming and overdue views until until (an RFC
// 3339 time or a date; DefaultSnooze from now when empty), which must be in the future.
func (s *Service) SnoozeTask(ctx context.Context, projectID, botID, id, until string) (Task, error) {
	var p apperr.Problems
	end := parseTime(&p, "until", until)
	if err := p.Err(); err != nil {
		return Task{}, err
	}
	return s.changeTask(ctx, projectID, botID, id, func(t *Task) error {
		if end.IsZero() {
			end = t.UpdatedAt.Add(DefaultSnooze)
		}
		if !end.After(t.UpdatedAt) {
			return apperr.Invalidf("until", "must be in the future")
		}
		if t.Status != TaskOpen {
			return apperr.New(apperr.Conflict, "task_done", "The task is done: reopen it (status open) to snooze it.")
		}
		t.SnoozedUntil = end
		return nil
	})
}

// changeTask applies change to the stored task and saves it with task.updated, again on a
// concurrent write.
func (s *Service) changeTask(ctx context.Context, projectID, botID, id string, change func(*Task) error) (Task, error) {
	return apperr.Reapply(ctx, &s.writes, TaskResource, id, func() (Task, error) {
		t, err := s.repo.Task(ctx, projectID, botID, strings.TrimSpace(id))
		if err != nil {
			return Task{}, err
		}
		t.UpdatedAt = s.now()
		if err := change(&t); err != nil {
			return Task{}, err
		}
		t.plan()
		t.Rev++
		ev := taskEvents.New(ctx, outbox.TaskUpdated, projectID, botID, t)
		if err := s.repo.ReplaceTask(ctx, t, ev); err != nil {
			return Task{}, err
		}
		s.events.Dispatch(ctx, outbox.Ref{Resource: TaskResource, ID: t.UUID}, ev)
		return t, nil
	})
}

// DeleteTask removes a task of the agent, with task.deleted.
func (s *Service) DeleteTask(ctx context.Context, projectID, botID, id string) error {
	t, err := s.repo.Task(ctx, projectID, botID, strings.TrimSpace(id))
	if err != nil {
		return err
	}
	ev := taskEvents.New(ctx, outbox.TaskDeleted, projectID, botID, t)
	if err := s.repo.DeleteTask(ctx, t, s.now(), ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: TaskResource, ID: t.UUID}, ev)
	return nil
}

// Tasks lists the agent's tasks: by status, and by view (open tasks not snoozed due today,
// due after today, due before now; or open tasks snoozed), "today" in the IANA time zone
// q.Timezone (UTC when empty).
func (s *Service) Tasks(ctx context.Context, projectID, botID string, q TaskQuery, page paging.Page) ([]Task, int, error) {
	f, err := s.taskFilter(projectID, botID, q)
	if err != nil {
		return nil, 0, err
	}
	return s.repo.Tasks(ctx, f, page)
}

func (s *Service) taskFilter(projectID, botID string, q TaskQuery) (TaskFilter, error) {
	var p apperr.Problems
	f := TaskFilter{ProjectID: projectID, BotID: botID}
	if st := strings.TrimSpace(q.Status); st != "" {
		oneOf(&p, "status", &st, taskStatuses)
		f.Status = st
	}
	view := strings.TrimSpace(q.View)
	if view != "" {
		oneOf(&p, "view", &view, taskViews)
	}
	loc := time.UTC
	if tz := strings.TrimSpace(q.Timezone); tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil || tz == "Local" {
			p.Add("timezone", "must be an IANA time zone such as Europe/Paris")
		} else {
			loc = l
		}
	}
	if view != "" && f.Status == TaskDone {
		p.Add("view", "lists open tasks: leave status out or set it to open")
	}
	if err := p.Err(); err != nil {
		return TaskFilter{}, err
	}
	if view == "" {
		return f, nil
	}
	now := s.now()
	local := now.In(loc)
	today := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	tomorrow := today.AddDate(0, 0, 1)
	f.Status, f.Now, f.ByDue = TaskOpen, now, true
	switch view {
	case ViewToday:
		f.DueFrom, f.DueBefore = today.UTC(), tomorrow.UTC()
	case ViewUpcoming:
		f.DueFrom = tomorrow.UTC()
	case ViewOverdue:
		f.DueFrom, f.DueBefore = minTime, now
	case ViewSnoozed:
		f.Snoozed, f.ByDue = true, false
	}
	return f, nil
}

// dueBatch bounds the tasks one NoticeDue sends task.due for; the rest wait for the next.
const dueBatch = 100

// NoticeDue sends task.due for the tasks whose due time (or snooze end) has come by now, once
// per task and due time however many schedulers call it at once: each event rides in the
// task's write of the revision read, which only one of them makes. It returns how many it sent.
func (s *Service) NoticeDue(ctx context.Context, now time.Time) (int, error) {
	due, err := s.repo.DueTasks(ctx, now, dueBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range due {
		t.NoticedDue = t.DueAt
		t.plan()
		t.Rev++
		ev := taskEvents.New(ctx, outbox.TaskDue, t.ProjectID, t.BotID, t)
		switch err := s.repo.ReplaceTask(ctx, t, ev); {
		case apperr.As(err).Kind == apperr.Conflict:
			// Another scheduler sent it, or a change came first (and planned the task anew).
			continue
		case err != nil:
			return n, err
		}
		s.events.Dispatch(ctx, outbox.Ref{Resource: TaskResource, ID: t.UUID}, ev)
		n++
	}
	return n, nil
}
