package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/shared/adapters/queue"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/tasks"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// worker is a worker of its own queue on the tests' Redis, as workers.Serve makes one: an asynq
// server whose looks for tasks wait for wakes at most poll, and which looks again 10 ms after a
// look that found nothing. Each task it runs sends its id to ran.
type worker struct {
	q      *queue.Queue
	client *asynq.Client
	waiter *queue.Waiter
	srv    *asynq.Server
	stop   context.CancelFunc
	ran    chan string
	name   string
}

func startWorker(t *testing.T, poll time.Duration) *worker {
	t.Helper()
	return startWorkerOn(t, testenv.NewName(), options{poll: poll, concurrency: 2, delayed: 50 * time.Millisecond})
}

// options are a worker's: its poll, the tasks it runs at once, how often its asynq moves due
// tasks to the queue, how long its shutdown waits for tasks under way (asynq's 8 s when 0), and
// the channel whose close ends a task whose payload is "hold".
type options struct {
	poll, delayed, shutdown time.Duration
	concurrency             int
	hold                    <-chan struct{}
}

// startWorkerOn starts a worker of the queue name.
func startWorkerOn(t *testing.T, name string, o options) *worker {
	t.Helper()
	opt, err := asynq.ParseRedisURI(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{name: name, ran: make(chan string, 8), client: asynq.NewClient(opt)}
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = w.client.Close(); _ = insp.Close() })
	w.q = queue.New(w.client, insp, testenv.Redis(t), w.name)
	ctx, stop := context.WithCancel(context.Background())
	w.stop = stop
	w.waiter = queue.NewWaiter(w.name, o.poll, ctx.Done())
	w.srv = asynq.NewServer(w.waiter.ConnOpt(opt), asynq.Config{Concurrency: o.concurrency, Queues: map[string]int{w.name: 1},
		TaskCheckInterval: 10 * time.Millisecond, DelayedTaskCheckInterval: o.delayed, ShutdownTimeout: o.shutdown,
		LogLevel: asynq.FatalLevel})
	if err := w.srv.Start(asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
		w.ran <- string(task.Payload())
		if string(task.Payload()) == `"hold"` {
			<-o.hold
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		w.waiter.Listen(ctx, testenv.Redis(t))
	}()
	t.Cleanup(func() {
		w.shutdown(t)
		<-listening
	})
	return w
}

// shutdown stops the worker, as workers.Serve does when its context ends: the waiter's end comes
// first, then asynq's shutdown, which fails the test unless it returns within 10 s.
func (w *worker) shutdown(t *testing.T) {
	t.Helper()
	w.stop()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w.srv.Shutdown()
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Error("the worker's shutdown waited for its look's poll")
	}
}

// idle waits until the worker's look for tasks waits for a wake.
func (w *worker) idle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); w.waiter.Waiting() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker's look for tasks never waited for a wake")
		}
	}
}

// runs waits for the worker to run the task whose payload is want.
func (w *worker) runs(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-w.ran:
		if got != want {
			t.Fatalf("the worker ran %s, want %s", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the worker never ran %s", want)
	}
}

// enqueue enqueues, through the queue (with its wake), the task whose id and payload are id, to
// run after the delay after.
func (w *worker) enqueue(t *testing.T, id string, after time.Duration) {
	t.Helper()
	if err := w.q.Enqueue(t.Context(), tasks.Task{Type: "test:wake", ID: id, Payload: id, After: after}); err != nil {
		t.Fatal(err)
	}
}

// holding has the idle worker run a task that holds its slot (see options.hold).
func (w *worker) holding(t *testing.T) {
	t.Helper()
	w.idle(t)
	w.enqueue(t, "hold", 0)
	w.runs(t, `"hold"`)
}

// The looks of these workers wait an hour for a wake: a task they run within the test's bounds
// was taken because its enqueue (or asynq's move of a scheduled task to the queue) woke them.
func TestAnIdleWorkerIsWokenByATaskEnqueued(t *testing.T) {
	t.Parallel()
	w := startWorker(t, time.Hour)
	for _, id := range []string{"first", "second", "third"} {
		w.idle(t)
		w.enqueue(t, id, 0)
		w.runs(t, `"`+id+`"`)
	}
}

func TestAnIdleWorkerIsWokenByATaskScheduledComingDue(t *testing.T) {
	t.Parallel()
	w := startWorker(t, time.Hour)
	w.idle(t)
	w.enqueue(t, "later", 200*time.Millisecond)
	w.runs(t, `"later"`)
}

// A task coming due wakes every worker of the queue: the one whose asynq moved it to the queue
// may have no room for it. Here the first worker runs one task at a time and holds it, and the
// second's asynq never moves due tasks itself (it would every hour).
func TestATaskComingDueWakesTheOtherWorkers(t *testing.T) {
	t.Parallel()
	name, hold := testenv.NewName(), make(chan struct{})
	busy := startWorkerOn(t, name, options{poll: time.Hour, concurrency: 1, delayed: 50 * time.Millisecond, hold: hold})
	t.Cleanup(func() { close(hold) })
	busy.holding(t)
	idle := startWorkerOn(t, name, options{poll: time.Hour, concurrency: 1, delayed: time.Hour})
	idle.idle(t)
	busy.enqueue(t, "later", 200*time.Millisecond)
	idle.runs(t, `"later"`)
}

// A task that a stopping worker gives back unfinished wakes the other workers of the queue.
func TestATaskGivenBackWakesTheOtherWorkers(t *testing.T) {
	t.Parallel()
	name, hold := testenv.NewName(), make(chan struct{})
	stopping := startWorkerOn(t, name, options{poll: time.Hour, concurrency: 1, delayed: time.Hour, shutdown: 100 * time.Millisecond, hold: hold})
	stopping.holding(t)
	other := startWorkerOn(t, name, options{poll: time.Hour, concurrency: 1, delayed: time.Hour, hold: hold})
	t.Cleanup(func() { close(hold) })
	other.idle(t)
	stopping.shutdown(t)
	other.runs(t, `"hold"`)
}

// A task whose wake was lost (here: enqueued without one) is taken at the worker's poll.
func TestATaskWithoutAWakeIsTakenAtThePoll(t *testing.T) {
	t.Parallel()
	w := startWorker(t, 200*time.Millisecond)
	w.idle(t)
	if _, err := w.client.Enqueue(asynq.NewTask("test:wake", []byte("unannounced")), asynq.Queue(w.name)); err != nil {
		t.Fatal(err)
	}
	w.runs(t, "unannounced")
}

// A worker that stops does not wait for its poll: its look ends with the worker.
func TestAStoppingWorkerDoesNotWaitForItsPoll(t *testing.T) {
	t.Parallel()
	w := startWorker(t, time.Hour)
	w.idle(t)
	w.shutdown(t)
}
