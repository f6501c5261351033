// Package agentruns is the agent engine: multi-step reasoning runs (reasoning mode agent) in which
// the model calls tools before it answers.
//
// A run is an [Execution] stored in MongoDB. The API stores the user's message and the
// execution and enqueues a task; a worker claims the execution under a lease and runs its
// cycles, persisting each one before it announces it. The execution's Log is its event stream
// (stored, cycle, approval, done, error), so a client that reconnects, or an API replica that
// missed a notice, rebuilds the stream from MongoDB; core NATS only carries notices and the
// deltas of the final answer, which are not kept.
//
// Crash safety: a worker that dies loses its lease; the task is retried (asynq recovers it)
// and the next worker resumes after the last persisted cycle. A tool that changes data runs
// under an idempotency key of the execution and cycle, so a cycle redone after a crash does
// not repeat its effect.
package agentruns

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory"
)

// Resource names executions in errors.
const Resource = "execution"

// Statuses of an execution.
const (
	StatusQueued   = "queued"
	StatusRunning  = "running"
	StatusApproval = "awaiting_approval"
	StatusDone     = "succeeded"
	StatusFailed   = "failed"
	// StatusCanceled ends a run canceled before its end (Service.Cancel).
	StatusCanceled = "canceled"
)

// MaxCalls caps the model calls of a run (the 10x credit cap); the last one must answer.
const MaxCalls = 10

// Stream events of a run. Every one but Delta is kept in the execution's log, numbered from 1;
// Approval, Done, Error and Canceled end what a client follows (a run resumed after approval goes on
// with more entries).
const (
	EventStored   = "stored"
	EventCycle    = "cycle"
	EventStep     = "step"
	EventApproval = "approval"
	EventDone     = "done"
	EventError    = "error"
	EventCanceled = "canceled"
	EventDelta    = "delta"
)

// Cycle is one reasoning cycle (2.6): the model's thought, the tool it called and what it
// observed.
type Cycle struct {
	Cycle         int          `json:"cycle" bson:"cycle"`
	Thought       string       `json:"thought" bson:"thought"`
	Action        string       `json:"action" bson:"action"`
	ActionInput   string       `json:"actionInput" bson:"action_input"`
	Observation   string       `json:"observation" bson:"observation"`
	ActionSuccess bool         `json:"actionSuccess" bson:"action_success"`
	Timestamp     string       `json:"timestamp" bson:"timestamp"`
	Sources       []memory.Ref `json:"sources" bson:"sources"`
	// ServerLabel and Operation name the tool called: whose it is (an agent tool's name, or
	// agentplane) and its own name on its server.
	ServerLabel string `json:"server_label,omitempty" bson:"server_label,omitempty"`
	Operation   string `json:"operation,omitempty" bson:"operation,omitempty"`
	// CallID is the model's id of the tool call.
	CallID string `json:"-" bson:"call_id"`
	// Passages are the memory passages the cycle found, numbered after those of earlier cycles.
	Passages []memory.Passage `json:"-" bson:"passages"`
}

// Pending is a tool call that waits for the user's approval.
type Pending struct {
	Cycle  int    `bson:"cycle"`
	CallID string `bson:"call_id"`
	Tool   string `bson:"tool"`
	// Label and Operation are the tool's server label and its own name there.
	Label     string `bson:"label"`
	Operation string `bson:"operation"`
	Arguments string `bson:"arguments"`
	Thought   string `bson:"thought"`
	// Decided is set by the approval: Approved, with the Arguments the user may have edited.
	Decided  bool `bson:"decided"`
	Approved bool `bson:"approved"`
}

// Entry is one kept event of a run's stream; Data is its JSON.
type Entry struct {
	Seq   int    `bson:"seq"`
	Event string `bson:"event"`
	Data  string `bson:"data"`
}

// stop returns the entry a client following the run stops at, if the run has one now: its
// answer, its error, or the approval it still waits for.
func (e Execution) stop() (Entry, bool) {
	if len(e.Log) == 0 {
		return Entry{}, false
	}
	last := e.Log[len(e.Log)-1]
	switch {
	case last.Event == EventDone || last.Event == EventError || last.Event == EventCanceled:
		return last, true
	case last.Event == EventApproval && e.Status == StatusApproval:
		return last, true
	}
	return Entry{}, false
}

// Request is what the execution keeps of the chat request (never the provider key).
type Request struct {
	Message        string   `bson:"message"`
	Model          string   `bson:"model"`
	MaxReplyTokens int      `bson:"max_reply_tokens"`
	HasMaxTokens   bool     `bson:"has_max_tokens"`
	Instruction    string   `bson:"instruction"`
	SourceIDs      []string `bson:"source_ids"`
	Tags           []string `bson:"tags"`
	Top            int      `bson:"top"`
	HasTop         bool     `bson:"has_top"`
	NoMemory       bool     `bson:"no_memory"`
	ProviderHost   string   `bson:"provider_host"`
	ChatMode       string   `bson:"chat_mode"`
	// Workspace is the uuid of the agent's workspace the run edits with the file tools (its
	// chat's, in chat_mode edit; authorised when the turn began), "" for none.
	Workspace string `bson:"workspace,omitempty"`
	// Hop is the A2A call the run answers (chats.Input.Hop), 0 for none.
	Hop int `bson:"hop,omitempty"`
	// Version is the agent's version the turn began with (0 before versions were: the
	// published one).
	Version int `bson:"version,omitempty"`
}

// Usage sums the token counts of a run's model calls.
type Usage struct {
	PromptTokens     int `bson:"prompt_tokens"`
	CompletionTokens int `bson:"completion_tokens"`
	TotalTokens      int `bson:"total_tokens"`
	CachedTokens     int `bson:"cached_tokens"`
	ReasoningTokens  int `bson:"reasoning_tokens"`
}

// Execution is a stored agent run.
type Execution struct {
	ID        string        `bson:"_id"`
	ProjectID string        `bson:"project_id"`
	BotID     string        `bson:"bot_id"`
	ChatID    string        `bson:"chat_id"`
	Request   Request       `bson:"request"`
	User      chats.Message `bson:"user"`
	Status    string        `bson:"status"`
	Cycles    []Cycle       `bson:"cycles"`
	// Calls counts the model calls made so far: the run's credits.
	Calls   int      `bson:"calls"`
	Usage   Usage    `bson:"usage"`
	Pending *Pending `bson:"pending,omitempty"`
	Log     []Entry  `bson:"log"`
	// Answer is the agent's message in the chat, kept when the run ends.
	Answer *chats.Message `bson:"answer,omitempty"`
	// TextProtocol is set once the provider refused tool calling: tools are then described in
	// the prompt and called in text.
	TextProtocol bool `bson:"text_protocol"`
	// Plan is the accepted plan the run carries out step by step (chat_mode plan); Step is the
	// index of the step under way and Results the answers of the steps done.
	Plan    []string `bson:"plan,omitempty"`
	Step    int      `bson:"step"`
	Results []string `bson:"results,omitempty"`
	// Capped is set when the run used all its calls without the model answering.
	Capped     bool      `bson:"capped"`
	Owner      string    `bson:"owner"`
	LeaseUntil time.Time `bson:"lease_until"`
	Started    time.Time `bson:"started"`
	CreatedAt  time.Time `bson:"created_at"`
	UpdatedAt  time.Time `bson:"updated_at"`
	// Origin names what started the run when no person did (heartbeats.Origin).
	Origin string `bson:"origin,omitempty"`
	// EndUser is the user whose memories the run's prompts get and whose message may add to
	// them (chats.Turn.EndUser); "" for none.
	EndUser string `bson:"end_user,omitempty"`
	// CancelRequested asks the worker holding the run to end it canceled (Service.Cancel): the
	// worker's writes of the run, and the renewals of its lease, are refused once it is set,
	// so the worker learns of it without reading for it.
	CancelRequested bool `bson:"cancel_requested,omitempty"`
}

// Change is what a worker persists about the execution it holds: fields to set and a cycle
// and log entries to add.
type Change struct {
	Set   map[string]any
	Unset []string
	Cycle *Cycle
	Log   []Entry
	// End says the change ends the run (done, failed or canceled): the execution, once
	// changed, moves out of the live ones, soon after the call. A change that does not end the
	// run is refused once a cancel was asked for (Execution.CancelRequested).
	End bool
}

// Repo persists executions. Every write of a worker is conditional on its lease.
type Repo interface {
	Insert(ctx context.Context, e Execution) error
	// Get returns the execution of the agent in the project: NotFound otherwise.
	Get(ctx context.Context, projectID, botID, id string) (Execution, error)
	// Claim takes the lease of a queued or running execution whose lease is free or expired,
	// setting it running; ok is false (with the current execution) when it cannot be taken.
	Claim(ctx context.Context, id, owner string, until, now time.Time) (e Execution, ok bool, err error)
	// Renew extends the owner's lease; false when it was lost, or a cancel of the run was asked
	// for.
	Renew(ctx context.Context, id, owner string, until time.Time) (bool, error)
	// Advance applies c to the execution held by owner, whose log has logged entries; false
	// when the lease was lost, or (for a change that does not end the run) a cancel of the run
	// was asked for.
	Advance(ctx context.Context, id, owner string, logged int, c Change) (bool, error)
	// Release gives up the owner's lease of a run it stops before its end, queueing it again.
	Release(ctx context.Context, id, owner string, now time.Time) error
	// MoveEnded moves up to limit ended executions still among the live ones out of them,
	// and says how many it moved.
	MoveEnded(ctx context.Context, limit int) (int, error)
	// Stale lists the ids of executions queued since before queuedBefore, or running with a
	// lease that expired before leaseBefore: runs whose task may be lost.
	Stale(ctx context.Context, queuedBefore, leaseBefore time.Time, limit int) ([]string, error)
	// Waiting returns the chat's execution that waits for an approval: NotFound when none does.
	Waiting(ctx context.Context, projectID, botID, chatID string) (Execution, error)
	// Cancel cancels the execution e (as read): one no worker holds (queued, or waiting for an
	// approval) ends canceled at once, its log adding entry (numbered after the others); a
	// running one is asked to (CancelRequested), for its worker to end. An execution that
	// changed since it was read is read again. It returns the execution as it then is; changed
	// is false when it had ended already.
	Cancel(ctx context.Context, e Execution, entry Entry, now time.Time) (canceled Execution, changed bool, err error)
	// Decide records the decision on the pending tool call of cycle and queues the run again;
	// false when the execution does not wait for that decision.
	Decide(ctx context.Context, projectID, botID, id string, cycle int, approved bool, arguments string, now time.Time) (bool, error)
}

// Progress is a notice about a running execution: a new kept entry (Seq), or a piece of the
// final answer (Delta).
type Progress struct {
	Seq   int    `json:"seq,omitempty"`
	Delta string `json:"delta,omitempty"`
	// Entry is the kept entry Seq itself, when it moves the run on (a cycle, a step) and is at
	// most noticeEntryMax bytes of data: followers emit it without reading the run back.
	Entry *Entry `json:"entry,omitempty"`
}

// noticeEntryMax bounds the data of an entry a notice carries.
const noticeEntryMax = 32 << 10

// noticeOf is the notice of en, kept: with en itself when it moves the run on and is small. The
// entries that stop a follower go by number alone, so that the follower reads the run as it
// then is.
func noticeOf(en Entry) Progress {
	p := Progress{Seq: en.Seq}
	if (en.Event == EventCycle || en.Event == EventStep) && len(en.Data) <= noticeEntryMax {
		p.Entry = &en
	}
	return p
}

// Relay carries progress notices between workers and API replicas (core NATS in production).
// Notices may be lost: followers re-read the execution.
type Relay interface {
	Notify(ctx context.Context, executionID string, p Progress)
	// Watch delivers the notices of the execution until stop is called.
	Watch(executionID string) (notices <-chan Progress, stop func(), err error)
}

// Failure is what the error entry that ends a failed run keeps: the error's kind (a word, see
// apperr.Kind.String), code and message; the API answers it as its error body.
type Failure struct {
	Kind    string `json:"kind"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// FailureOf reads the failure an error entry keeps. Entries written before failures kept their
// kind hold an error body ({"error": {"code", "message"}}): their code and message are kept, as
// an internal failure.
func FailureOf(e Entry) Failure {
	var v struct {
		Failure
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(e.Data), &v)
	if v.Kind != "" || v.Error.Code == "" {
		return v.Failure
	}
	return Failure{Kind: apperr.Internal.String(), Code: v.Error.Code, Message: v.Error.Message}
}

// Err is the failure as the error it was.
func (f Failure) Err() error {
	return &apperr.Error{Kind: apperr.KindNamed(f.Kind), Code: f.Code, Message: f.Message}
}
