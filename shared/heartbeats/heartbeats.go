// Package heartbeats is agents acting on their own: a heartbeat is a prompt an agent answers on
// a schedule, as an agent run (tools and approvals included) in a chat of its own, within a
// budget of credits, pausing or disabling itself when it must.
//
// The scheduler queues each due firing once, with a task id of (heartbeat, scheduled time),
// before it moves the heartbeat's next firing on: two schedulers make one task, and a firing
// missed while no scheduler ran is queued once, at the next look, not once per missed slot. A
// worker records the firing under the same id, checks the agent and the budget, and starts the
// run; the run's end settles the firing and the heartbeat's counters, once (the heartbeat names
// the firing under way until it is settled), and emits heartbeat.completed or heartbeat.failed.
// A heartbeat has one firing under way at a time: a firing due while another runs or waits for
// an approval is skipped, and says so in the logs.
package heartbeats

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Resource names heartbeats in errors; FiringResource their firings.
const (
	Resource       = "heartbeat"
	FiringResource = "heartbeat_firing"
)

// Statuses of a heartbeat: active (firing on schedule when enabled), paused by its budget, or
// disabled by its errors. Enabling it again makes it active.
const (
	StatusActive   = "active"
	StatusPaused   = "paused"
	StatusDisabled = "disabled"
)

// Statuses of a firing. Starting, running and waiting ones are under way; the others ended.
const (
	FiringStarting  = "starting"
	FiringRunning   = "running"
	FiringWaiting   = "awaiting_approval"
	FiringSucceeded = "succeeded"
	FiringFailed    = "failed"
	FiringSkipped   = "skipped"
)

// How a firing came: its schedule, or a trigger by hand.
const (
	TriggerSchedule = "schedule"
	TriggerManual   = "manual"
)

// Bounds and defaults of a heartbeat.
const (
	DefaultMaxErrors   = 5
	MaxMaxErrors       = 100
	MaxPerAgent        = 50
	MaxMemberIDLength  = 200
	DefaultTimezone    = "UTC"
	maxAnswerInFiring  = 2000
	maxReasonInFiring  = 500
	defaultFiringCost  = 1
	firingCreditPeriod = "2006-01"
)

// Heartbeat is a scheduled prompt of an agent.
type Heartbeat struct {
	UUID      string `json:"uuid" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"-" bson:"bot_id"`
	// AccountID is the account whose key configured it: the runs are its turns.
	AccountID   string `json:"-" bson:"account_id"`
	Prompt      string `json:"prompt" bson:"prompt"`
	CronPattern string `json:"cron_pattern" bson:"cron_pattern"`
	Timezone    string `json:"timezone" bson:"timezone"`
	Enabled     bool   `json:"enabled" bson:"enabled"`
	// Status is active, paused (its budget) or disabled (its errors), with the reason.
	Status       string `json:"status" bson:"status"`
	StatusReason string `json:"status_reason" bson:"status_reason"`
	// CreditBudget bounds the credits of its firings per calendar month in its time zone (0: no
	// bound).
	CreditBudget         int    `json:"credit_budget" bson:"credit_budget"`
	MaxConsecutiveErrors int    `json:"max_consecutive_errors" bson:"max_consecutive_errors"`
	MemberID             string `json:"member_id" bson:"member_id"`
	ChatMode             string `json:"chat_mode" bson:"chat_mode"`
	// ChatID is the chat its firings talk in, from the first one on.
	ChatID    string     `json:"chat_id" bson:"chat_id"`
	NextRunAt *time.Time `json:"next_run_at" bson:"next_run_at"`
	Stats     `bson:",inline"`
	// Running is the firing under way, until its end is settled.
	Running   string     `json:"running_firing_id" bson:"running"`
	CreatedAt time.Time  `json:"created_at" bson:"created_at"`
	UpdatedAt time.Time  `json:"updated_at" bson:"updated_at"`
	Rev       int64      `json:"-" bson:"rev"`
	DeletedAt *time.Time `json:"-" bson:"deleted_at,omitempty"`
}

// Stats are the counts of a heartbeat's settled firings.
type Stats struct {
	Runs      int `json:"runs" bson:"runs"`
	Successes int `json:"successes" bson:"successes"`
	Errors    int `json:"errors" bson:"errors"`
	// Skipped counts the firings not started (budget, a firing still under way).
	Skipped           int        `json:"skipped" bson:"skipped"`
	ConsecutiveErrors int        `json:"consecutive_errors" bson:"consecutive_errors"`
	CreditsUsed       int        `json:"credits_used" bson:"credits_used"`
	Tokens            int        `json:"tokens" bson:"tokens"`
	Period            string     `json:"credit_period" bson:"period"`
	PeriodCredits     int        `json:"credits_used_in_period" bson:"period_credits"`
	LastCredits       int        `json:"last_credits" bson:"last_credits"`
	LastRunAt         *time.Time `json:"last_run_at" bson:"last_run_at"`
	LastStatus        string     `json:"last_status" bson:"last_status"`
	LastError         string     `json:"last_error" bson:"last_error"`
}

// Firing is one firing of a heartbeat: its agent run (ExecutionID is the firing's id) or why it
// did not start.
type Firing struct {
	ID          string     `json:"firing_id" bson:"_id"`
	HeartbeatID string     `json:"heartbeat_id" bson:"heartbeat_id"`
	ProjectID   string     `json:"-" bson:"project_id"`
	BotID       string     `json:"-" bson:"bot_id"`
	Trigger     string     `json:"trigger" bson:"trigger"`
	ScheduledAt time.Time  `json:"scheduled_at" bson:"scheduled_at"`
	Status      string     `json:"status" bson:"status"`
	Reason      string     `json:"reason,omitempty" bson:"reason,omitempty"`
	Error       *Failure   `json:"error,omitempty" bson:"error,omitempty"`
	ExecutionID string     `json:"execution_id,omitempty" bson:"execution_id,omitempty"`
	ChatID      string     `json:"chat_id,omitempty" bson:"chat_id,omitempty"`
	Credits     int        `json:"credits_used" bson:"credits"`
	Tokens      int        `json:"tokens" bson:"tokens"`
	Answer      string     `json:"answer,omitempty" bson:"answer,omitempty"`
	StartedAt   *time.Time `json:"started_at" bson:"started_at"`
	EndedAt     *time.Time `json:"ended_at" bson:"ended_at"`
	CreatedAt   time.Time  `json:"created_at" bson:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at" bson:"updated_at"`
}

// Ended reports whether the firing is over.
func (f Firing) Ended() bool {
	return f.Status == FiringSucceeded || f.Status == FiringFailed || f.Status == FiringSkipped
}

// Failure is why a firing failed: the error's code and message.
type Failure struct {
	Code    string `json:"code" bson:"code"`
	Message string `json:"message" bson:"message"`
}

// Input is the body of a heartbeat's configuration: fields absent or null keep their value (or
// default on creation).
type Input struct {
	Prompt               *string     `json:"prompt"`
	CronPattern          *string     `json:"cron_pattern"`
	Timezone             *string     `json:"timezone"`
	Enabled              *bool       `json:"enabled"`
	CreditBudget         flex.OptInt `json:"credit_budget"`
	MaxConsecutiveErrors flex.OptInt `json:"max_consecutive_errors"`
	MemberID             *string     `json:"member_id"`
	ChatMode             *string     `json:"chat_mode"`
}

func (in Input) apply(h *Heartbeat) {
	for dst, src := range map[*string]*string{&h.Prompt: in.Prompt, &h.CronPattern: in.CronPattern, &h.Timezone: in.Timezone,
		&h.MemberID: in.MemberID, &h.ChatMode: in.ChatMode} {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	if in.Enabled != nil {
		h.Enabled = *in.Enabled
	}
	if in.CreditBudget.Set {
		h.CreditBudget = int(in.CreditBudget.Value)
	}
	if in.MaxConsecutiveErrors.Set {
		h.MaxConsecutiveErrors = int(in.MaxConsecutiveErrors.Value)
	}
	if h.Timezone == "" {
		h.Timezone = DefaultTimezone
	}
	if h.ChatMode == "" {
		h.ChatMode = "ask"
	}
	h.ChatMode = strings.ToLower(h.ChatMode)
}

// validate checks h and returns its schedule.
func (h *Heartbeat) validate() (Cron, error) {
	var p apperr.Problems
	switch {
	case h.Prompt == "":
		p.Add("prompt", "is required: what the agent is asked at each firing")
	case utf8.RuneCountInString(h.Prompt) > chats.MaxMessageLength:
		p.Add("prompt", "must be at most %d characters", chats.MaxMessageLength)
	}
	var c Cron
	if h.CronPattern == "" {
		p.Add("cron_pattern", "is required: five cron fields such as 0 9 * * 1-5")
	} else if parsed, err := ParseCron(h.CronPattern, h.Timezone); err != nil {
		field := "cron_pattern"
		if strings.HasPrefix(err.Error(), "timezone") {
			field = "timezone"
		}
		p.Add(field, "%s", err.Error())
	} else {
		c = parsed
	}
	if h.CreditBudget < 0 {
		p.Add("credit_budget", "must be 0 (no bound) or more")
	}
	if h.MaxConsecutiveErrors < 1 || h.MaxConsecutiveErrors > MaxMaxErrors {
		p.Add("max_consecutive_errors", "must be between 1 and %d", MaxMaxErrors)
	}
	if utf8.RuneCountInString(h.MemberID) > MaxMemberIDLength {
		p.Add("member_id", "must be at most %d characters", MaxMemberIDLength)
	}
	if !slices.Contains(chats.ChatModes, h.ChatMode) {
		p.Add("chat_mode", "must be one of %s", strings.Join(chats.ChatModes, ", "))
	}
	return c, p.Err()
}

// schedule is h's cron; h was validated when stored.
func (h Heartbeat) schedule() (Cron, error) { return ParseCron(h.CronPattern, h.Timezone) }

// Repo persists heartbeats and their firings. Heartbeat lookups exclude deleted ones.
type Repo interface {
	Insert(ctx context.Context, h Heartbeat) error
	// Get returns a heartbeat of the agent in the project: NotFound otherwise.
	Get(ctx context.Context, projectID, botID, id string) (Heartbeat, error)
	// ByID returns a heartbeat by its id alone (workers and the scheduler).
	ByID(ctx context.Context, id string) (Heartbeat, error)
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Heartbeat, int, error)
	// All returns every heartbeat of the agent (at most MaxPerAgent).
	All(ctx context.Context, projectID, botID string) ([]Heartbeat, error)
	// Replace writes h over the stored heartbeat of revision h.Rev-1, with evs in its outbox: a
	// Conflict heartbeat_changed otherwise.
	Replace(ctx context.Context, h Heartbeat, evs ...outbox.Event) error
	Delete(ctx context.Context, h Heartbeat, at time.Time) error
	// Due lists enabled heartbeats whose next firing is at or before now.
	Due(ctx context.Context, now time.Time, limit int) ([]Heartbeat, error)
	// Busy lists heartbeats with a firing under way.
	Busy(ctx context.Context, limit int) ([]Heartbeat, error)
	// Advance moves the next firing of heartbeat id from slot to next (next nil: none), raising
	// its revision; false when its next firing was not slot any more.
	Advance(ctx context.Context, id string, slot time.Time, next *time.Time) (bool, error)
	// InsertFiring stores f, or returns the firing already stored under its id.
	InsertFiring(ctx context.Context, f Firing) (Firing, error)
	Firing(ctx context.Context, id string) (Firing, error)
	// SetFiring sets fields of the firing id if its status is one of from; false otherwise.
	SetFiring(ctx context.Context, id string, from []string, set map[string]any) (bool, error)
	// Firings is one page of the agent's firings, newest first: of one heartbeat, or of all when
	// heartbeatID is empty.
	Firings(ctx context.Context, projectID, botID, heartbeatID string, page paging.Page) ([]Firing, int, error)
}
