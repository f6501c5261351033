// Package workers is the worker role: the asynq server, with one handler per task type registered
// on one mux, and the workflow triggers that turn domain events into workflow runs.
package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplane/agentplane/shared/adapters/metrics"
	"github.com/agentplane/agentplane/shared/adapters/queue"
	"github.com/agentplane/agentplane/shared/adapters/tracing"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/evals"
	"github.com/agentplane/agentplane/shared/heartbeats"
	"github.com/agentplane/agentplane/shared/kit/opcount"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/stats"
	"github.com/agentplane/agentplane/shared/tasks"
	"github.com/agentplane/agentplane/shared/usermemory"
	"github.com/agentplane/agentplane/shared/workflows"
)

// scope is the instrumentation scope of the task spans.
const scope = "github.com/agentplane/agentplane/workers"

// Deps is what the worker role needs.
type Deps struct {
	Logger          *slog.Logger
	Redis           asynq.RedisConnOpt
	Queue           string
	Concurrency     int
	ShutdownTimeout time.Duration
	Sources         *sources.Ingester
	Runs            *agentruns.Runner
	Workflows       *workflows.Executor
	// Heartbeats carry out the firings of heartbeats.
	Heartbeats *heartbeats.Service
	// Poll is how long an idle worker waits for the wake of a task enqueued before it looks for
	// tasks again (see queue.Waiter).
	Poll time.Duration
	// Metrics count the tasks run.
	Metrics *metrics.Metrics
	// RetryDelay spaces the attempts of a failing task; nil is asynq's exponential backoff.
	RetryDelay asynq.RetryDelayFunc
	// RetryCheckInterval is how often tasks waiting for a retry are looked for; 0 is asynq's 5s.
	RetryCheckInterval time.Duration
	// Triggers start workflow runs for domain events.
	Triggers Triggers
	// Started, when set, is called once the worker takes tasks and its triggers consume.
	Started func()
	// UserMemory extracts what end users' messages say about them.
	UserMemory *usermemory.Service
	// Channels answer the messages taken from messaging platforms and send the answers.
	Channels *channels.Service
	// Email answers the mail agents receive and sends the answers.
	Email *email.Service
	// Stats keeps the agents' statistics as their chats' events arrive.
	Stats *stats.Recorder
	// Evals carry out eval runs.
	Evals *evals.Runner
	// OnlineEvals grade agents' live answers.
	OnlineEvals *evals.Online
}

// lookPause is asynq's sleep after a look for tasks found none, which the waiter held until a wake
// or its poll: a task enqueued meanwhile waits for its end.
const lookPause = 10 * time.Millisecond

// drainTimeout bounds how long a stopping worker waits for handlers it cancelled to return
// (an agent run gives its lease back then).
const drainTimeout = 5 * time.Second

// Serve serves tasks until ctx ends, then stops taking new ones and waits for running ones (up to
// the shutdown timeout). Unfinished ones go back to the queue and are retried; their handlers'
// contexts are cancelled at that moment, and the worker waits for them to return before it
// does, so that they can leave their work in a state the next worker takes over at once.
func Serve(ctx context.Context, d Deps) error {
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	var inflight sync.WaitGroup
	m := mux(d, ctx.Done())
	m.Use(func(h asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			inflight.Add(1)
			defer inflight.Done()
			return measured(ctx, d.Metrics, t.Type(), func(ctx context.Context) error { return h.ProcessTask(ctx, t) })
		})
	})
	m.Use(traced)
	waiter := queue.NewWaiter(d.Queue, d.Poll, ctx.Done())
	srv := asynq.NewServer(waiter.ConnOpt(d.Redis), asynq.Config{
		BaseContext:              func() context.Context { return base },
		Concurrency:              d.Concurrency,
		Queues:                   map[string]int{d.Queue: 1},
		ShutdownTimeout:          d.ShutdownTimeout,
		RetryDelayFunc:           retryDelay(d.RetryDelay),
		DelayedTaskCheckInterval: d.RetryCheckInterval,
		TaskCheckInterval:        lookPause,
		Logger:                   asynqLogger{d.Logger.With("component", "worker")},
		LogLevel:                 asynq.WarnLevel,
	})
	wakes, ok := d.Redis.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return fmt.Errorf("worker: the Redis of %T is not a go-redis client", d.Redis)
	}
	defer func() { _ = wakes.Close() }()
	listen, stopListening := context.WithCancel(ctx)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		waiter.Listen(listen, wakes)
	}()
	defer func() {
		stopListening()
		<-listening
	}()
	if err := srv.Start(m); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	d.Logger.Info("worker started", "concurrency", d.Concurrency, "queue", d.Queue)
	recording := make(chan struct{})
	go func() {
		defer close(recording)
		d.Stats.Run(ctx)
	}()
	h := &here{x: d.Workflows, runs: d.Triggers.Runs, base: base, slots: make(chan struct{}, max(d.Concurrency, 1)),
		inflight: &inflight, metrics: d.Metrics, log: d.Logger.With("component", "triggers")}
	triggers := make(chan struct{})
	consuming := make(chan struct{})
	go func() {
		defer close(triggers)
		d.Triggers.serve(ctx, h, d.Metrics, d.Logger, func() { close(consuming) })
	}()
	select {
	case <-consuming:
		if d.Started != nil {
			d.Started()
		}
	case <-ctx.Done():
	}
	<-ctx.Done()
	<-triggers
	<-recording
	aborting := time.AfterFunc(d.ShutdownTimeout, cancelBase)
	srv.Shutdown()
	aborting.Stop()
	cancelBase()
	drained := make(chan struct{})
	go func() {
		inflight.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		d.Logger.Warn("worker stopped with handlers still running")
	}
	d.Logger.Info("worker stopped")
	return nil
}

// measured runs do as a task of type typ, counted in m (when not nil) with its duration, outcome
// and store commands.
func measured(ctx context.Context, m *metrics.Metrics, typ string, do func(context.Context) error) error {
	start := time.Now()
	ctx, commands := opcount.With(ctx)
	err := do(ctx)
	if m != nil {
		m.Task(typ, time.Since(start), err, commands.Load())
	}
	return err
}

// mux routes each task type to its handler; stopping closes when the worker stops taking tasks
// (an eval run then stops claiming cases and finishes those it has).
func mux(d Deps, stopping <-chan struct{}) *asynq.ServeMux {
	m := asynq.NewServeMux()
	m.HandleFunc(tasks.TypeSourceIngest, ingest(d, func(ctx context.Context, t tasks.SourceIngestPayload, final bool) error {
		return d.Sources.Ingest(ctx, t, final)
	}))
	m.HandleFunc(tasks.TypeSourceSync, ingest(d, func(ctx context.Context, t tasks.SourceSyncPayload, final bool) error {
		return d.Sources.Sync(ctx, t, final)
	}))
	m.HandleFunc(tasks.TypeSourceSweep, func(ctx context.Context, _ *asynq.Task) error { return d.Sources.Sweep(ctx) })
	m.HandleFunc(tasks.TypeAgentRun, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.AgentRunPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Runs.Run(ctx, t, final(ctx))
	})
	m.HandleFunc(tasks.TypeWorkflowRun, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.WorkflowRunPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Workflows.Execute(ctx, t, final(ctx))
	})
	m.HandleFunc(tasks.TypeHeartbeatFire, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.HeartbeatFirePayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Heartbeats.Fire(ctx, t)
	})
	m.HandleFunc(tasks.TypeMemoryExtract, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.MemoryExtractPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		err := d.UserMemory.Extract(ctx, t)
		if errors.Is(err, usermemory.ErrDropped) {
			d.Logger.Warn("user memory extraction dropped", "bot_id", t.BotID, "message_id", t.MessageID, "error", err)
			return nil
		}
		return err
	})
	m.HandleFunc(tasks.TypeChannelAnswer, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.ChannelPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Channels.Answer(ctx, t.ID, final(ctx))
	})
	m.HandleFunc(tasks.TypeChannelSend, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.ChannelPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Channels.Deliver(ctx, t.ID, final(ctx))
	})
	m.HandleFunc(tasks.TypeEmailAnswer, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.EmailPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Email.Answer(ctx, t.ID, final(ctx))
	})
	m.HandleFunc(tasks.TypeEmailSend, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.EmailPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Email.Send(ctx, t.ID, final(ctx))
	})
	m.HandleFunc(tasks.TypeEvalRun, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.EvalRunPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.Evals.Execute(ctx, t.RunID, final(ctx), stopping)
	})
	m.HandleFunc(tasks.TypeOnlineEval, func(ctx context.Context, task *asynq.Task) error {
		var t tasks.OnlineEvalPayload
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		return d.OnlineEvals.Grade(ctx, t)
	})
	return m
}

// retryDelay spaces a failing task's attempts by the time its error asks for (a platform's
// Retry-After), else by delay (asynq's exponential back-off when nil).
func retryDelay(delay asynq.RetryDelayFunc) asynq.RetryDelayFunc {
	if delay == nil {
		delay = asynq.DefaultRetryDelayFunc
	}
	return func(n int, err error, t *asynq.Task) time.Duration {
		if after, ok := tasks.RetryIn(err); ok {
			return after
		}
		return delay(n, err, t)
	}
}

// traced runs each task in a span named after its type, a child of the trace context its
// enqueuer put in the task's headers.
func traced(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) (err error) {
		id, _ := asynq.GetTaskID(ctx)
		queue, _ := asynq.GetQueueName(ctx)
		retried, _ := asynq.GetRetryCount(ctx)
		ctx, span := otel.Tracer(scope).Start(otel.GetTextMapPropagator().Extract(ctx, propagation.MapCarrier(t.Headers())), t.Type(),
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
				attribute.String("asynq.task.type", t.Type()),
				attribute.String("asynq.task.id", id),
				attribute.String("asynq.queue", queue),
				attribute.Int("asynq.task.retried", retried)))
		defer func() { tracing.End(span, err) }()
		return h.ProcessTask(ctx, t)
	})
}

// ingest adapts an ingestion handler: it decodes the payload, tells the handler whether this
// is the last attempt, and ends the task once a permanent failure is recorded on the source.
func ingest[T any](d Deps, h func(ctx context.Context, t T, final bool) error) asynq.HandlerFunc {
	return func(ctx context.Context, task *asynq.Task) error {
		var t T
		if err := json.Unmarshal(task.Payload(), &t); err != nil {
			return fmt.Errorf("%w: payload: %v", asynq.SkipRetry, err)
		}
		err := h(ctx, t, final(ctx))
		if errors.Is(err, sources.ErrPermanent) {
			d.Logger.Info("ingestion failed for good", "task", task.Type(), "error", err)
			return nil
		}
		return err
	}
}

// final reports whether the task of ctx is on its last attempt.
func final(ctx context.Context) bool {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return retried >= maxRetry
}

// asynqLogger writes asynq's log lines through slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
