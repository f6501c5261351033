// Package tasks is the contract between the parts that queue work and the workers that do it:
// each task type's name, payload and constructor (asynq's own style: TypeXxx, XxxPayload,
// NewXxxTask). Every task carries a deterministic id, so enqueueing the same work twice (a
// retried request, two schedulers, the reconciler) leaves one task; handlers are idempotent
// because a task may still run twice. The queue itself is an adapter (shared/adapters/queue).
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The task types.
const (
	// TypeSourceIngest fetches, extracts, chunks and indexes one generation of a memory source.
	TypeSourceIngest = "source:ingest"
	// TypeSourceSync re-ingests a source whose sync is due.
	TypeSourceSync = "source:sync"
	// TypeSourceSweep deletes the data of expired and deleted sources.
	TypeSourceSweep = "source:sweep"
	// TypeAgentRun runs (or resumes) the reasoning cycles of an agent run.
	TypeAgentRun = "agent:run"
	// TypeWorkflowRun runs (or resumes) the actions of a workflow run.
	TypeWorkflowRun = "workflow:run"
	// TypeHeartbeatFire carries out one firing of a heartbeat: its agent run.
	TypeHeartbeatFire = "heartbeat:fire"
	// TypeMemoryExtract extracts what a user's message says about them into the user's memories.
	TypeMemoryExtract = "memory:extract"
	// TypeChannelAnswer answers a message taken from a channel.
	TypeChannelAnswer = "channel:answer"
	// TypeChannelSend sends an answer through a channel's platform.
	TypeChannelSend = "channel:send"
	// TypeEmailAnswer answers an email an agent received.
	TypeEmailAnswer = "email:answer"
	// TypeEmailSend sends an answer to an email through the relay.
	TypeEmailSend = "email:send"
	// TypeEvalRun answers and grades the cases of an eval run.
	TypeEvalRun = "eval:run"
	// TypeOnlineEval grades a live answer of an agent with its online rule graders.
	TypeOnlineEval = "eval:online"
)

// Task is one piece of work for the workers: its type, the id that makes queueing it
// idempotent, and its payload (JSON on the queue).
type Task struct {
	Type    string
	ID      string
	Payload any
	// After, when set, holds the task back from the workers until that long after it is queued.
	After time.Duration
}

// Queue is where tasks wait for a worker.
type Queue interface {
	// Enqueue adds t, unless a task of its type and id is still queued, running or retrying.
	// A queue that is down is an Unavailable error.
	Enqueue(ctx context.Context, t Task) error
	// Forget removes the task of t's type and id while it waits (held back, queued or waiting
	// for a retry); one running or gone is left as it is. A queue that is down is Unavailable.
	Forget(ctx context.Context, t Task) error
}

// Tracker is a queue that also tells whether a task is under way.
type Tracker interface {
	Queue
	// Live reports whether the task of t's type and id is queued, scheduled, running or
	// waiting to be retried (not archived, done or unknown).
	Live(ctx context.Context, t Task) (bool, error)
}

// SourceIngestPayload names the generation of a source to ingest.
type SourceIngestPayload struct {
	SourceID string `json:"source_id"`
	Gen      string `json:"gen"`
}

// NewSourceIngestTask ingests generation gen of a source, once per generation.
func NewSourceIngestTask(sourceID, gen string) Task {
	return Task{Type: TypeSourceIngest, ID: sourceID + ":" + gen, Payload: SourceIngestPayload{SourceID: sourceID, Gen: gen}}
}

// SourceSyncPayload names a source whose sync was due at Due.
type SourceSyncPayload struct {
	SourceID string    `json:"source_id"`
	Due      time.Time `json:"due"`
}

// NewSourceSyncTask syncs a source, once per due time.
func NewSourceSyncTask(sourceID string, due time.Time) Task {
	return Task{Type: TypeSourceSync, ID: sourceID + ":" + strconv.FormatInt(due.UnixMilli(), 10), Payload: SourceSyncPayload{SourceID: sourceID, Due: due}}
}

// NewSourceSweepTask sweeps expired and deleted sources, once per minute of at.
func NewSourceSweepTask(at time.Time) Task {
	return Task{Type: TypeSourceSweep, ID: at.UTC().Truncate(time.Minute).Format(time.RFC3339), Payload: struct{}{}}
}

// AgentRunPayload names the agent run to run or resume. ProviderKey is the request's own model
// provider key, when it gave one: it travels with the task and is never stored.
type AgentRunPayload struct {
	ExecutionID string `json:"execution_id"`
	ProviderKey string `json:"provider_key,omitempty"`
}

// NewAgentRunTask starts an agent run.
func NewAgentRunTask(p AgentRunPayload) Task {
	return Task{Type: TypeAgentRun, ID: p.ExecutionID, Payload: p}
}

// NewAgentRunResumeTask resumes an agent run once the approval its cycle waited for is decided.
func NewAgentRunResumeTask(p AgentRunPayload, cycle int) Task {
	return Task{Type: TypeAgentRun, ID: p.ExecutionID + ":approval:" + strconv.Itoa(cycle), Payload: p}
}

// NewAgentRunRequeueTask queues again an agent run whose task was lost, once per minute of at.
func NewAgentRunRequeueTask(executionID string, at time.Time) Task {
	return Task{Type: TypeAgentRun, ID: executionID + ":requeue:" + strconv.FormatInt(at.Unix()/60, 10), Payload: AgentRunPayload{ExecutionID: executionID}}
}

// WorkflowRunPayload names the workflow run to run or resume.
type WorkflowRunPayload struct {
	RunID string `json:"run_id"`
}

// NewWorkflowRunTask runs a workflow run.
func NewWorkflowRunTask(runID string) Task {
	return Task{Type: TypeWorkflowRun, ID: runID, Payload: WorkflowRunPayload{RunID: runID}}
}

// HeartbeatFirePayload names a firing of a heartbeat: the time it was due (or triggered), and
// whether it was triggered by hand.
type HeartbeatFirePayload struct {
	HeartbeatID string    `json:"heartbeat_id"`
	At          time.Time `json:"at"`
	Manual      bool      `json:"manual,omitempty"`
}

// NewHeartbeatFireTask fires a heartbeat once per due time (schedulers queueing it together
// queue one), or once per trigger by hand.
func NewHeartbeatFireTask(heartbeatID string, at time.Time, manual bool) Task {
	id := heartbeatID + ":" + strconv.FormatInt(at.Unix(), 10)
	if manual {
		id = heartbeatID + ":m" + strconv.FormatInt(at.UnixMilli(), 10)
	}
	return Task{Type: TypeHeartbeatFire, ID: id, Payload: HeartbeatFirePayload{HeartbeatID: heartbeatID, At: at, Manual: manual}}
}

// MemoryExtractPayload is a user's message to extract durable facts about the user from: the
// agent and user they are kept for, the message (its id and text), and the provider that
// answered the turn (the request's host, model and key travel with the task and are never
// stored).
type MemoryExtractPayload struct {
	ProjectID    string `json:"project_id"`
	BotID        string `json:"bot_id"`
	UserUUID     string `json:"user_uuid"`
	MessageID    string `json:"message_id"`
	Text         string `json:"text"`
	Model        string `json:"model,omitempty"`
	ProviderHost string `json:"provider_host,omitempty"`
	ProviderKey  string `json:"provider_key,omitempty"`
}

// NewMemoryExtractTask extracts the facts of one message, once per message.
func NewMemoryExtractTask(p MemoryExtractPayload) Task {
	return Task{Type: TypeMemoryExtract, ID: p.MessageID, Payload: p}
}

// ChannelPayload names the message to answer or the answer to send.
type ChannelPayload struct {
	ID string `json:"id"`
}

// NewChannelAnswerTask answers the channel's message id.
func NewChannelAnswerTask(id string) Task {
	return Task{Type: TypeChannelAnswer, ID: id, Payload: ChannelPayload{ID: id}}
}

// NewChannelSendTask sends the channel's answer id.
func NewChannelSendTask(id string) Task {
	return Task{Type: TypeChannelSend, ID: id, Payload: ChannelPayload{ID: id}}
}

// EmailPayload names the email to answer or the answer to send.
type EmailPayload struct {
	ID string `json:"id"`
}

// NewEmailAnswerTask answers the email id.
func NewEmailAnswerTask(id string) Task {
	return Task{Type: TypeEmailAnswer, ID: id, Payload: EmailPayload{ID: id}}
}

// NewEmailSendTask sends the answer id.
func NewEmailSendTask(id string) Task {
	return Task{Type: TypeEmailSend, ID: id, Payload: EmailPayload{ID: id}}
}

// EvalRunPayload names the eval run to carry out or go on with.
type EvalRunPayload struct {
	RunID string `json:"run_id"`
}

// NewEvalRunTask carries out an eval run.
func NewEvalRunTask(runID string) Task {
	return Task{Type: TypeEvalRun, ID: runID, Payload: EvalRunPayload{RunID: runID}}
}

// NewEvalRunRequeueTask goes on with an eval run whose task was lost, once per minute of at.
func NewEvalRunRequeueTask(runID string, at time.Time) Task {
	return Task{Type: TypeEvalRun, ID: runID + ":requeue:" + strconv.FormatInt(at.Unix()/60, 10), Payload: EvalRunPayload{RunID: runID}}
}

// OnlineEvalPayload is a live answer to grade: the agent's message, the version that wrote it,
// its text, when it was written, and the agent's criteria (an evals case, as JSON).
type OnlineEvalPayload struct {
	ProjectID string          `json:"project_id"`
	BotID     string          `json:"bot_id"`
	ChatID    string          `json:"chat_id"`
	MessageID string          `json:"message_id"`
	Version   int             `json:"version"`
	Answer    string          `json:"answer"`
	At        time.Time       `json:"at"`
	Criteria  json.RawMessage `json:"criteria"`
}

// NewOnlineEvalTask grades the live answer p carries.
func NewOnlineEvalTask(p OnlineEvalPayload) Task {
	return Task{Type: TypeOnlineEval, ID: p.MessageID, Payload: p}
}

// RetryIn reports how long a task whose handler failed with err should wait before it is tried
// again, when err says (an error with a RetryAfter method, such as a platform's 429): the
// queue's own back-off otherwise.
func RetryIn(err error) (time.Duration, bool) {
	var later interface{ RetryAfter() time.Duration }
	if errors.As(err, &later) && later.RetryAfter() > 0 {
		return later.RetryAfter(), true
	}
	return 0, false
}

// Redacted is a task payload as an operator may see it (the queue dashboard): its JSON with the
// value of every field whose name holds "key", "secret", "token" or "password" masked, at any
// depth; a payload that is not JSON shows only its size. An agent run's payload carries the
// request's provider key, for one.
func Redacted(payload []byte) string {
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return "(" + strconv.Itoa(len(payload)) + " bytes, not JSON)"
	}
	out, err := json.Marshal(redact(v))
	if err != nil {
		return "(" + strconv.Itoa(len(payload)) + " bytes)"
	}
	return string(out)
}

func redact(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			name := strings.ToLower(k)
			if strings.Contains(name, "key") || strings.Contains(name, "secret") || strings.Contains(name, "token") || strings.Contains(name, "password") {
				v[k] = "[redacted]"
				continue
			}
			v[k] = redact(x)
		}
	case []any:
		for i, x := range v {
			v[i] = redact(x)
		}
	}
	return v
}
