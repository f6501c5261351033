package evals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/llm"
)

// Agent is one version of an agent as eval runs ask it.
type Agent interface {
	// Answer answers the case as a chat of the version would, storing no chat.
	Answer(ctx context.Context, c Case) (Answer, error)
	// Complete calls the agent's model provider (the judge's).
	Complete(ctx context.Context, r llm.Request) (llm.Reply, error)
}

// Agents gives the agent's version of a run: NotFound when the agent or the version is gone.
type Agents func(ctx context.Context, projectID, botID string, version int) (Agent, error)

// Runner carries out eval runs in a worker: a run's cases are answered a few at a time, each
// claimed under a lease so that it is graded once whichever worker takes it, and a run taken
// over after a worker stopped or died goes on with the cases not graded.
type Runner struct {
	repo        RunRepo
	agents      Agents
	lease       time.Duration
	concurrency int
	log         *slog.Logger
	owner       string
	now         func() time.Time
}

// NewRunner returns a runner answering up to concurrency cases of a run at once, each held
// for lease.
func NewRunner(repo RunRepo, agents Agents, lease time.Duration, concurrency int, log *slog.Logger) *Runner {
	return &Runner{repo: repo, agents: agents, lease: lease, concurrency: max(concurrency, 1), log: log, owner: ids.New(),
		now: func() time.Time { return time.Now().UTC() }}
}

// ErrStopped is the end of a run's task that stopped before its cases were all graded (the
// worker stops): the task is tried again and the run goes on.
var ErrStopped = errors.New("the eval run stopped before its end")

// later is a failure whose task should be tried again after a while.
type later struct {
	err   error
	after time.Duration
}

func (l later) Error() string             { return l.err.Error() }
func (l later) Unwrap() error             { return l.err }
func (l later) RetryAfter() time.Duration { return l.after }

// Execute answers and grades the run's cases not graded yet until none is left or stopping
// closes, then records the run's outcome once every case is graded. A run gone, or done, is
// nothing to do. On the task's final attempt (final), a provider failure that may pass is the
// case's error rather than the task's, so that the run ends.
func (x *Runner) Execute(ctx context.Context, runID string, final bool, stopping <-chan struct{}) error {
	run, err := x.repo.FindRun(ctx, runID)
	if apperr.IsNotFound(err) || (err == nil && run.Status == RunDone) {
		return nil
	}
	if err != nil {
		return err
	}
	agent, err := x.agents(ctx, run.ProjectID, run.BotID, run.Version)
	if apperr.IsNotFound(err) {
		x.log.Info("eval run of an agent or version gone: dropped", "run_id", run.UUID)
		return nil
	}
	if err != nil {
		return err
	}
	if err := x.repo.SetStatus(ctx, run.UUID, RunQueued, RunRunning); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, x.concurrency)
	for i := range x.concurrency {
		wg.Go(func() { errs[i] = x.work(ctx, run, agent, final, stopping) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	select {
	case <-stopping:
		return ErrStopped
	default:
	}
	left, err := x.repo.Ungraded(ctx, run.UUID)
	if err != nil {
		return err
	}
	if left > 0 {
		// Cases held by another worker, or by one that died: their leases end in time.
		return later{err: fmt.Errorf("eval run %s: %d cases held elsewhere", run.UUID, left), after: x.lease}
	}
	return x.finish(ctx, run)
}

// work claims, answers and grades cases of the run one after the other until none is left to
// claim or stopping closes.
func (x *Runner) work(ctx context.Context, run Run, agent Agent, final bool, stopping <-chan struct{}) error {
	for {
		select {
		case <-stopping:
			return nil
		default:
		}
		now := x.now()
		r, ok, err := x.repo.Claim(ctx, run.UUID, x.owner, now.Add(x.lease), now)
		if err != nil || !ok {
			return err
		}
		if err := x.grade(ctx, agent, &r, final); err != nil {
			release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = x.repo.Release(release, r, x.owner)
			cancel()
			return err
		}
		if _, err := x.repo.Grade(ctx, r, x.owner); err != nil {
			return err
		}
	}
}

// grade answers r's case (unless r keeps its answer from an attempt before) and grades the
// answer. An answer the agent could not give, or a judge's verdict not given, for a reason that
// may pass (the provider down, or limiting past the waits its client makes) is an error, unless
// final: the case is taken again later, answered again only when it had no answer. Any other failure (a provider's refusal, as of an unknown model) is the
// case's: an answer's fails every grade, a judge's its grade, with the error.
func (x *Runner) grade(ctx context.Context, agent Agent, r *Result, final bool) error {
	c := &r.Case
	ctx, cancel := context.WithTimeout(ctx, x.lease)
	defer cancel()
	passing := func(err error) bool {
		return !final && (ctx.Err() != nil || (apperr.Passing(apperr.As(err)) && !llm.Permanent(err)))
	}
	a, err := answerOf(*r), error(nil)
	if !r.Answered {
		a, err = agent.Answer(ctx, *c)
	}
	if err != nil {
		if passing(err) {
			return err
		}
		e := apperr.As(err)
		r.Error, r.Sources, r.ToolCalls = e.Message, []Source{}, []ToolCall{}
		for _, name := range c.Graders {
			r.Grades = append(r.Grades, Grade{Grader: name, Error: true, Reason: "the agent gave no answer: " + e.Message})
		}
		r.GradedAt = x.now()
		return nil
	}
	r.Answer, r.Sources, r.ToolCalls, r.Answered = a.Text, a.Sources, a.ToolCalls, true
	r.Tokens, r.Cost, r.LatencyMS = a.Tokens, a.Cost, a.Latency.Milliseconds()
	r.Grades = c.Grade(a)
	for i, g := range r.Grades {
		if g.Grader != GraderJudge {
			continue
		}
		if r.Grades[i], err = Judge(ctx, agent.Complete, *c, a.Text); err != nil && passing(err) {
			return err
		}
	}
	r.GradedAt = x.now()
	return nil
}

// answerOf is the answer r keeps.
func answerOf(r Result) Answer {
	return Answer{Text: r.Answer, Sources: r.Sources, ToolCalls: r.ToolCalls, Latency: time.Duration(r.LatencyMS) * time.Millisecond,
		Tokens: r.Tokens, Cost: r.Cost}
}

// finish records the run's outcome from its graded cases.
func (x *Runner) finish(ctx context.Context, run Run) error {
	results, err := x.repo.Results(ctx, run.UUID)
	if err != nil {
		return err
	}
	graders, passed := rates(results, run.Thresholds)
	run.Graders, run.Passed, run.Status = graders, &passed, RunDone
	for _, r := range results {
		run.Tokens += r.Tokens
		run.Cost += r.Cost
	}
	at := x.now()
	run.FinishedAt = &at
	return x.repo.Finish(ctx, run)
}
