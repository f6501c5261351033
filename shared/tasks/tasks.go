// Package tasks names the queue's task types and enqueues them. Every task carries a
// deterministic id, so enqueueing the same work twice (a retried request, two schedulers, the
// reconciler) leaves one task; handlers are idempotent because a task may still run twice.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/agentplane/agentplane/shared/apperr"
)

// The task types.
const (
	// IngestSource fetches, extracts, chunks and indexes one generation of a memory source.
	IngestSource = "source:ingest"
	// SyncSource re-ingests a source whose sync is due.
	SyncSource = "source:sync"
	// SweepSources deletes the data of expired and deleted sources.
	SweepSources = "source:sweep"
	// RunAgent runs (or resumes) the reasoning cycles of an agent execution.
	RunAgent = "agent:run"
	// RunWorkflow runs (or resumes) the actions of a workflow run.
	RunWorkflow = "workflow:run"
)

// options are the retry and time limits of each type.
var options = map[string][]asynq.Option{
	IngestSource: {asynq.MaxRetry(8), asynq.Timeout(10 * time.Minute)},
	SyncSource:   {asynq.MaxRetry(8), asynq.Timeout(10 * time.Minute)},
	SweepSources: {asynq.MaxRetry(3), asynq.Timeout(5 * time.Minute)},
	RunAgent:     {asynq.MaxRetry(10), asynq.Timeout(15 * time.Minute)},
	RunWorkflow:  {asynq.MaxRetry(8), asynq.Timeout(10 * time.Minute)},
}

// Queue enqueues tasks on one asynq queue, and tells which are under way.
type Queue struct {
	client *asynq.Client
	insp   *asynq.Inspector
	name   string
}

// NewQueue returns a queue named name of the Redis of client and insp.
func NewQueue(client *asynq.Client, insp *asynq.Inspector, name string) *Queue {
	return &Queue{client: client, insp: insp, name: name}
}

// Live reports whether the task of type typ and id is queued, scheduled, running or waiting to
// be retried (not archived, done or unknown).
func (q *Queue) Live(ctx context.Context, typ, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	info, err := q.insp.GetTaskInfo(q.name, typ+":"+id)
	switch {
	case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		return false, nil
	case err != nil:
		return false, apperr.Unavailablef("redis", err)
	}
	return info.State != asynq.TaskStateArchived && info.State != asynq.TaskStateCompleted, nil
}

// Enqueue adds a task of type typ with payload, identified by id. A task of the same id that
// is still queued, running or retrying makes this a no-op. A Redis failure is Unavailable. The
// task's headers carry the trace context of ctx, for the worker's span of the task.
func (q *Queue) Enqueue(ctx context.Context, typ, id string, payload any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	headers := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, headers)
	opts := append([]asynq.Option{asynq.Queue(q.name), asynq.TaskID(typ + ":" + id)}, options[typ]...)
	_, err = q.client.EnqueueContext(ctx, asynq.NewTaskWithHeaders(typ, raw, headers), opts...)
	if err == nil || errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return apperr.Unavailablef("redis", err)
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
