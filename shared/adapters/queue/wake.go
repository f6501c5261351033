package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// An idle asynq worker looks for a task, finds none, and sleeps its TaskCheckInterval before it
// looks again, uninterruptibly: the interval is the queue latency of every task enqueued while
// the workers are idle, and the looks cost whether tasks come or not (at 10 ms, 100 Redis scripts
// a second and most of an idle process's CPU). Here an enqueue publishes a wake on the queue's
// Redis, and a worker's look that finds the queue empty waits for a wake, or for the poll (the
// fallback for wakes lost with a connection), before it looks again: the look is held in the
// Redis client the worker's asynq server uses, by a hook that knows asynq's dequeue script by the
// keys it names (and its moves of tasks to the queue, scheduled or retried ones come due and
// unfinished ones given back by a worker that stops, which wake the workers too).

// wakeChannel is the Redis channel of the wakes of the queue name.
func wakeChannel(name string) string { return "agentplane:queue:{" + name + "}:ready" }

// Waiter holds a worker's look for tasks in the queue while it is empty, until a wake, the poll
// or the end of the worker.
type Waiter struct {
	channel                                          string
	pending, paused, scheduled, retry, active, lease string // asynq's keys of the queue
	poll                                             time.Duration
	stop                                             <-chan struct{}

	mu      sync.Mutex
	woken   chan struct{} // closed at the next wake
	waiting int           // looks held
}

// NewWaiter returns the waiter of the queue name's workers: a look that finds it empty waits for
// a wake at most poll; none waits once stop is closed.
func NewWaiter(name string, poll time.Duration, stop <-chan struct{}) *Waiter {
	prefix := "asynq:{" + name + "}:"
	return &Waiter{channel: wakeChannel(name), pending: prefix + "pending", paused: prefix + "paused",
		scheduled: prefix + "scheduled", retry: prefix + "retry", active: prefix + "active", lease: prefix + "lease",
		poll: poll, stop: stop, woken: make(chan struct{})}
}

// ConnOpt is opt with the waiter's hook in the clients it makes: the worker's asynq server is
// given it.
func (w *Waiter) ConnOpt(opt asynq.RedisConnOpt) asynq.RedisConnOpt { return waitingOpt{opt, w} }

type waitingOpt struct {
	asynq.RedisConnOpt
	w *Waiter
}

func (o waitingOpt) MakeRedisClient() any {
	c := o.RedisConnOpt.MakeRedisClient()
	if u, ok := c.(redis.UniversalClient); ok {
		u.AddHook(o.w)
	}
	return c
}

// Listen wakes the waiter at each wake of its queue on rdb, and whenever its subscription is
// made (again after a lost connection, when wakes may have been lost), until ctx ends.
func (w *Waiter) Listen(ctx context.Context, rdb redis.UniversalClient) {
	sub := rdb.Subscribe(ctx, w.channel)
	defer func() { _ = sub.Close() }()
	msgs := sub.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-msgs:
			if !ok {
				return
			}
			w.wake()
		}
	}
}

// Waiting is how many looks for tasks wait for a wake.
func (w *Waiter) Waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting
}

func (w *Waiter) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.woken)
	w.woken = make(chan struct{})
}

// next is closed at the next wake.
func (w *Waiter) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.woken
}

func (w *Waiter) held(d int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting += d
}

// DialHook is go-redis's dial, unchanged.
func (w *Waiter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook is go-redis's pipelines, unchanged.
func (w *Waiter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// ProcessHook holds asynq's empty looks for a task (see look), and wakes the queue's workers when
// asynq moves tasks to the queue: scheduled or retried ones come due, unfinished ones given back.
func (w *Waiter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		keys := w.keys(cmd)
		switch {
		case len(keys) >= 2 && keys[0] == w.pending && keys[1] == w.paused:
			return w.look(ctx, cmd, next)
		case len(keys) >= 2 && keys[1] == w.pending && (keys[0] == w.scheduled || keys[0] == w.retry),
			len(keys) >= 3 && keys[0] == w.active && keys[1] == w.lease && keys[2] == w.pending:
			// Tasks moved to the queue (due, or given back by a worker stopping with them
			// unfinished) wake every worker of the queue (this one may have no room for them, or
			// be stopping), this one at once. A move that failed may have moved tasks all the same
			// (a reply lost): looking again costs one look.
			err := next(ctx, cmd)
			if c, ok := cmd.(*redis.Cmd); !ok || err != nil || c.Val() != int64(0) {
				_ = next(ctx, redis.NewIntCmd(ctx, "publish", w.channel, ""))
				w.wake()
			}
			return err
		}
		return next(ctx, cmd)
	}
}

// keys are the keys a script names (none for other commands).
func (w *Waiter) keys(cmd redis.Cmder) []string {
	if name := cmd.Name(); name != "evalsha" && name != "eval" {
		return nil
	}
	args := cmd.Args() // the command, the script, the number of keys, the keys, the arguments
	if len(args) < 3 {
		return nil
	}
	n, ok := args[2].(int)
	if !ok || len(args) < 3+n {
		return nil
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i], _ = args[3+i].(string)
	}
	return keys
}

// look runs the dequeue script cmd, and again at each wake while it finds nothing, for at most
// the poll.
func (w *Waiter) look(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
	poll := time.NewTimer(w.poll)
	defer poll.Stop()
	for {
		woken := w.next()
		if err := next(ctx, cmd); !errors.Is(err, redis.Nil) || !w.wait(ctx, woken, poll.C) {
			return err
		}
	}
}

// wait waits for a wake (true), or for the poll, the worker's end or ctx's end (false).
func (w *Waiter) wait(ctx context.Context, woken <-chan struct{}, poll <-chan time.Time) bool {
	w.held(1)
	defer w.held(-1)
	select {
	case <-woken:
		return true
	case <-poll:
	case <-w.stop:
	case <-ctx.Done():
	}
	return false
}
