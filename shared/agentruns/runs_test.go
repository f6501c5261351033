package agentruns_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/config"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/opcount"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tasks"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// engine is the agent runs of one agent on the real stack, answered by a fake provider, whose
// tasks the test runs itself, one at a time, as a worker would.
type engine struct {
	d       app.Domain
	runner  *agentruns.Runner
	fake    *providertest.Server
	project string
	bot     agents.Bot
}

func newEngine(t *testing.T, autoApprove bool) engine {
	t.Helper()
	ctx := context.Background()
	fake := providertest.New(t)
	opt, err := asynq.ParseRedisURI(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	// A short lease renews often (every 100 ms): runs that last several renewals show that
	// their end is never taken for a lost lease.
	cfg := config.Config{Role: "test", Queue: testenv.NewName(), DefaultCurrency: "USD", AllowPrivate: true, ProviderURL: fake.URL,
		ProviderTimeout: 5 * time.Second, MemoryCacheBytes: 16 << 20, RunLease: 300 * time.Millisecond, WorkerConcurrency: 1,
		WorkerPoll: time.Second, ShutdownTimeout: time.Second, FetchTimeout: time.Second, MaxBodyBytes: 1 << 20}
	a := app.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), app.Conns{DB: testenv.Mongo(t), Redis: testenv.Redis(t), RedisOpt: opt, NATS: testenv.NATS(t)})
	t.Cleanup(a.Close)
	// Followers read runs on their notices alone, never on a poll tick.
	a.RunPoll = time.Minute
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := a.Domain()
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Worker()
	if err != nil {
		t.Fatal(err)
	}
	e := engine{d: d, runner: w.Runs, fake: fake, project: "p-" + testenv.NewName()}
	if e.bot, err = d.Agents.Create(ctx, e.project, "test", agents.Create{Name: "Runner", Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	patch := agents.Patch{ProviderKey: ptr("sk-engine")}
	if autoApprove {
		patch.AutoApproveTools = flex.OptFlag{OptInt: flex.OptInt{Set: true, Value: 1}}
	}
	if e.bot, err = d.Agents.Update(ctx, e.project, e.bot.ID, "test", patch); err != nil {
		t.Fatal(err)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

func call(name, args string) providertest.Turn {
	return providertest.Turn{Call: &providertest.Call{Name: name, Arguments: args}}
}

// start asks the agent message in agent mode and returns the run's execution id.
func (e engine) start(t *testing.T, message string, script ...providertest.Turn) string {
	t.Helper()
	e.fake.Set(providertest.Behavior{Script: script})
	out, err := e.d.Chats.Chat(context.Background(), e.project, e.bot, chats.Asker{AccountID: "acct"},
		chats.Input{Message: &message, ReasoningMode: "agent"}, nil)
	if err != nil || out.RunID == "" {
		t.Fatalf("chat: %+v, %v", out, err)
	}
	return out.RunID
}

// run runs the execution's task once, as a worker would, and returns the execution after.
func (e engine) run(t *testing.T, id string) agentruns.Execution {
	t.Helper()
	if err := e.runner.Run(context.Background(), tasks.AgentRunPayload{ExecutionID: id}, false); err != nil {
		t.Fatal(err)
	}
	x, err := e.d.AgentRuns.Get(context.Background(), e.project, e.bot.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (e engine) decide(id string, approve bool) (agentruns.Execution, error) {
	return e.d.AgentRuns.Decide(context.Background(), e.project, e.bot.ID, agentruns.Approval{ExecutionID: id, Approve: &approve})
}

func (e engine) deals(t *testing.T) []crm.View {
	t.Helper()
	list, _, err := e.d.CRM.Deals(context.Background(), e.project, e.bot.ID, crm.DealQuery{}, paging.Page{Page: 1, PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// The rules of a run, each from the model's choices to what the run keeps: tools that read run
// at once, tools that change data wait for the user (or not, for an agent that auto-approves),
// arguments that break a tool's schema are refused before anyone is asked, and a run that never
// answers stops at its call budget.
func TestRunRules(t *testing.T) {
	t.Parallel()
	t.Run("ReadThenAnswer", func(t *testing.T) {
		t.Parallel()
		e := newEngine(t, false)
		x := e.run(t, e.start(t, "Which deals are open?", call("list_deals", `{"status":"open"}`), providertest.Turn{Reply: "None are open."}))
		if x.Status != agentruns.StatusDone || len(x.Cycles) != 1 || !x.Cycles[0].ActionSuccess || x.Answer == nil || x.Answer.Content != "None are open." {
			t.Fatalf("execution %+v", x)
		}
	})
	t.Run("ChangeWaitsForApproval", func(t *testing.T) {
		t.Parallel()
		e := newEngine(t, false)
		id := e.start(t, "Add the Acme deal", call("create_deal", `{"title":"Acme"}`), providertest.Turn{Reply: "Added."})
		x := e.run(t, id)
		if x.Status != agentruns.StatusApproval || x.Pending == nil || x.Pending.Tool != "create_deal" || len(e.deals(t)) != 0 {
			t.Fatalf("before the decision %+v", x)
		}
		if _, err := e.decide(id, true); err != nil {
			t.Fatal(err)
		}
		if _, err := e.decide(id, false); apperr.As(err).Code != "execution_not_awaiting_approval" {
			t.Fatalf("a second decision: %v", err)
		}
		x = e.run(t, id)
		if x.Status != agentruns.StatusDone || len(x.Cycles) != 1 || !x.Cycles[0].ActionSuccess || len(e.deals(t)) != 1 {
			t.Fatalf("after the approval %+v, %d deals", x, len(e.deals(t)))
		}
		// The task again (a redelivery) finds the run over: nothing is done twice.
		if again := e.run(t, id); len(again.Log) != len(x.Log) || len(e.deals(t)) != 1 {
			t.Fatalf("the task run again: %d entries (was %d), %d deals", len(again.Log), len(x.Log), len(e.deals(t)))
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		t.Parallel()
		e := newEngine(t, false)
		id := e.start(t, "Add the Acme deal", call("create_deal", `{"title":"Acme"}`), providertest.Turn{Reply: "I did not add it."})
		e.run(t, id)
		if _, err := e.decide(id, false); err != nil {
			t.Fatal(err)
		}
		x := e.run(t, id)
		if x.Status != agentruns.StatusDone || x.Cycles[0].ActionSuccess || !strings.Contains(x.Cycles[0].Observation, "rejected") || len(e.deals(t)) != 0 {
			t.Fatalf("after the rejection %+v", x)
		}
	})
	t.Run("AutoApproved", func(t *testing.T) {
		t.Parallel()
		e := newEngine(t, true)
		x := e.run(t, e.start(t, "Add the Acme deal", call("create_deal", `{"title":"Acme"}`), providertest.Turn{Reply: "Added."}))
		if x.Status != agentruns.StatusDone || len(e.deals(t)) != 1 {
			t.Fatalf("auto-approved %+v", x)
		}
	})
	t.Run("BadArgumentsNotPutToApproval", func(t *testing.T) {
		t.Parallel()
		e := newEngine(t, false)
		x := e.run(t, e.start(t, "Add a deal", call("create_deal", `{"value":-5}`), providertest.Turn{Reply: "I could not."}))
		if x.Status != agentruns.StatusDone || x.Cycles[0].ActionSuccess || !strings.HasPrefix(x.Cycles[0].Observation, "Error:") {
			t.Fatalf("bad arguments %+v", x)
		}
	})
	t.Run("LastCallMustAnswer", func(t *testing.T) {
		t.Parallel()
		e := newEngine(t, false)
		script := make([]providertest.Turn, agentruns.MaxCalls)
		for i := range script {
			script[i] = call("list_deals", `{}`)
		}
		x := e.run(t, e.start(t, "Keep looking", script...))
		reqs := e.fake.Requests()
		if x.Status != agentruns.StatusDone || x.Calls != agentruns.MaxCalls || len(x.Cycles) != agentruns.MaxCalls-1 ||
			len(reqs) != agentruns.MaxCalls || reqs[len(reqs)-1].ToolChoice != "none" || x.Answer == nil {
			t.Fatalf("the run asked for more than %d calls: %d calls, %d cycles, last tool_choice %q", agentruns.MaxCalls, x.Calls, len(x.Cycles), reqs[len(reqs)-1].ToolChoice)
		}
	})
}

// A follower reads the run once when it starts and once when the run stops: the cycles in
// between come with their notices, in order, without reading the run back.
func TestFollowReadsTheRunOncePerStop(t *testing.T) {
	t.Parallel()
	e := newEngine(t, false)
	id := e.start(t, "Look three times", call("list_deals", `{}`), call("list_deals", `{"status":"open"}`), call("list_deals", `{"status":"won"}`),
		providertest.Turn{Reply: "Nothing anywhere."})
	x, err := e.d.AgentRuns.Get(context.Background(), e.project, e.bot.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, commands := opcount.With(context.Background())
	following := make(chan struct{})
	var events []string
	followed := make(chan error, 1)
	go func() {
		_, err := e.d.AgentRuns.Follow(ctx, x, 0, func(en agentruns.Entry) error {
			if en.Seq != len(events)+1 {
				return fmt.Errorf("entry %d after %d", en.Seq, len(events))
			}
			if events = append(events, en.Event); len(events) == 1 {
				close(following)
			}
			return nil
		}, nil)
		followed <- err
	}()
	<-following
	e.run(t, id)
	if err := <-followed; err != nil {
		t.Fatal(err)
	}
	want := []string{agentruns.EventStored, agentruns.EventCycle, agentruns.EventCycle, agentruns.EventCycle, agentruns.EventDone}
	// Two reads: the second makes two commands when the run has just moved to the finished ones.
	if !slices.Equal(events, want) || commands.Load() > 3 {
		t.Fatalf("the follower emitted %v in %d store commands, want %v in at most 3", events, commands.Load(), want)
	}
}

// A follower that stops before the run does (its wait is over) answers with the run as it is,
// with the cycles whose entries came with their notices.
func TestFollowOutOfTimeAnswersTheRunAsItIs(t *testing.T) {
	t.Parallel()
	e := newEngine(t, false)
	id := e.start(t, "Look twice", call("list_deals", `{}`), call("list_deals", `{"status":"open"}`), providertest.Turn{Reply: "Nothing."})
	x, err := e.d.AgentRuns.Get(context.Background(), e.project, e.bot.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	following := make(chan struct{})
	cycles := 0
	type result struct {
		x   agentruns.Execution
		err error
	}
	followed := make(chan result, 1)
	go func() {
		x, err := e.d.AgentRuns.Follow(ctx, x, 0, func(en agentruns.Entry) error {
			switch en.Event {
			case agentruns.EventStored:
				close(following)
			case agentruns.EventCycle:
				cycles++
				cancel() // the wait is over
			}
			return nil
		}, nil)
		followed <- result{x, err}
	}()
	<-following
	e.run(t, id)
	got := <-followed
	if got.err == nil || cycles == 0 || len(got.x.Cycles) < cycles {
		t.Fatalf("the follower emitted %d cycles and answered a run of %d cycles (%v)", cycles, len(got.x.Cycles), got.err)
	}
}
