// Package queue is the task queue on Redis, with asynq: it enqueues the tasks of shared/tasks
// with each type's retry and time limits, and tells which are under way.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tasks"
)

// options are the retry and time limits of each type.
var options = map[string][]asynq.Option{
	tasks.TypeSourceIngest:  {asynq.MaxRetry(8), asynq.Timeout(10 * time.Minute)},
	tasks.TypeSourceSync:    {asynq.MaxRetry(8), asynq.Timeout(10 * time.Minute)},
	tasks.TypeSourceSweep:   {asynq.MaxRetry(3), asynq.Timeout(5 * time.Minute)},
	tasks.TypeAgentRun:      {asynq.MaxRetry(10), asynq.Timeout(15 * time.Minute)},
	tasks.TypeWorkflowRun:   {asynq.MaxRetry(8), asynq.Timeout(10 * time.Minute)},
	tasks.TypeHeartbeatFire: {asynq.MaxRetry(8), asynq.Timeout(2 * time.Minute)},
	// memory:extract makes one model call: a few retries, and no longer than a model call.
	tasks.TypeMemoryExtract: {asynq.MaxRetry(3), asynq.Timeout(2 * time.Minute)},
	// channel:answer is a chat turn; channel:send waits out a platform's limits (Retry-After)
	// and outages: many retries, each one call of the platform's.
	tasks.TypeChannelAnswer: {asynq.MaxRetry(10), asynq.Timeout(5 * time.Minute)},
	tasks.TypeChannelSend:   {asynq.MaxRetry(20), asynq.Timeout(2 * time.Minute)},
	// email:answer is a chat turn; email:send waits out the relay's outages: many retries.
	tasks.TypeEmailAnswer: {asynq.MaxRetry(10), asynq.Timeout(5 * time.Minute)},
	tasks.TypeEmailSend:   {asynq.MaxRetry(20), asynq.Timeout(2 * time.Minute)},
	// eval:run answers a whole dataset (up to 1000 cases); a task stopped or failed goes on with
	// the cases not graded.
	tasks.TypeEvalRun: {asynq.MaxRetry(20), asynq.Timeout(time.Hour)},
	// eval:online grades one answer with rule graders and stores it: a few short attempts.
	tasks.TypeOnlineEval: {asynq.MaxRetry(5), asynq.Timeout(time.Minute)},
}

// Queue enqueues tasks on one asynq queue, and tells which are under way.
type Queue struct {
	client *asynq.Client
	insp   *asynq.Inspector
	wakes  redis.UniversalClient
	name   string
}

var _ tasks.Tracker = (*Queue)(nil)

// New returns a queue named name of the Redis of client and insp; the wakes of its workers are
// published on wakes, a client of the same Redis.
func New(client *asynq.Client, insp *asynq.Inspector, wakes redis.UniversalClient, name string) *Queue {
	return &Queue{client: client, insp: insp, wakes: wakes, name: name}
}

// Live reports whether the task of t's type and id is queued, scheduled, running or waiting to
// be retried (not archived, done or unknown).
func (q *Queue) Live(ctx context.Context, t tasks.Task) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	info, err := q.insp.GetTaskInfo(q.name, t.Type+":"+t.ID)
	switch {
	case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		return false, nil
	case err != nil:
		return false, apperr.Unavailablef("redis", err)
	}
	return info.State != asynq.TaskStateArchived && info.State != asynq.TaskStateCompleted, nil
}

// Enqueue adds t. A task of the same type and id that is still queued, running or retrying
// makes this a no-op. A Redis failure is Unavailable. The task's headers carry the trace
// context of ctx, for the worker's span of the task. A task to run now wakes the idle workers
// (see Waiter); one that did not wake them is taken at their next poll.
func (q *Queue) Enqueue(ctx context.Context, t tasks.Task) error {
	raw, err := json.Marshal(t.Payload)
	if err != nil {
		return err
	}
	headers := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, headers)
	opts := append([]asynq.Option{asynq.Queue(q.name), asynq.TaskID(t.Type + ":" + t.ID)}, options[t.Type]...)
	if t.After > 0 {
		opts = append(opts, asynq.ProcessIn(t.After))
	}
	_, err = q.client.EnqueueContext(ctx, asynq.NewTaskWithHeaders(t.Type, raw, headers), opts...)
	if err == nil && t.After <= 0 {
		_ = q.wakes.Publish(context.WithoutCancel(ctx), wakeChannel(q.name), "").Err() // the task is queued whatever becomes of ctx
	}
	if err == nil || errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return apperr.Unavailablef("redis", err)
}

// Forget deletes the task of t's type and id unless it is running (asynq refuses that) or gone.
func (q *Queue) Forget(ctx context.Context, t tasks.Task) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id := t.Type + ":" + t.ID
	err := q.insp.DeleteTask(q.name, id)
	if err == nil || errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	// asynq refuses to delete a running task with an error of no exported kind.
	if info, ierr := q.insp.GetTaskInfo(q.name, id); ierr == nil && info.State == asynq.TaskStateActive {
		return nil
	}
	return apperr.Unavailablef("redis", err)
}
