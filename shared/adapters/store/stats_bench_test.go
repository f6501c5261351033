package store_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/stats"
	"github.com/agentplane/agentplane/shared/tools"
	"github.com/agentplane/agentplane/shared/workflows"
)

var statsBenchMessages = flag.Int("stats.messages", 10_000, "messages of the agent the statistics benchmarks read")

// statsBenchBase is when the benchmarks' history starts: 45 days of messages, of which the
// benchmarks' window holds the first 30.
var statsBenchBase = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// statsBenchAt is when the i-th of n records falls, evenly over the 45 days from statsBenchBase
// (in whole seconds: i times 45 days in nanoseconds overflows an int64 past 2,372 records).
func statsBenchAt(i, n int) time.Time {
	return statsBenchBase.Add(time.Duration(int64(i)*45*24*3600/int64(n)) * time.Second)
}

// statsBench is the agent's seeded history, stored once per process (in a database of its
// own, kept for the process's later benchmarks).
var statsBench struct {
	once sync.Once
	db   *mongo.Database
	err  error
}

// statsBenchDB returns a database holding an agent ("p", "b") with n messages in chats of 100,
// a message every 45 days / n from statsBenchBase, recorded as the worker records them (their
// events folded into the agent's hours, in batches of 500) with a vote on some answers, with a
// second agent of as many messages beside it, and the agents' other records (runs, below).
func statsBenchDB(b *testing.B, n int) *mongo.Database {
	b.Helper()
	statsBench.once.Do(func() {
		ctx := context.Background()
		start := time.Now()
		db, err := store.Open(testenv.MongoURI(), fmt.Sprintf("statsbench%d", n), nil)
		if err == nil {
			err = testenv.Prepare(ctx, db)
		}
		for _, bot := range []string{"b", "other"} {
			if err == nil {
				err = seedStatsBench(ctx, db, bot, n)
			}
		}
		statsBench.db, statsBench.err = db, err
		b.Logf("seeded %d messages in %s", 2*n, time.Since(start).Round(time.Second))
	})
	if statsBench.err != nil {
		b.Fatal(statsBench.err)
	}
	return statsBench.db
}

// statsBenchSeq numbers the seeded events across both agents, as the stream would.
var statsBenchSeq uint64

func seedStatsBench(ctx context.Context, db *mongo.Database, bot string, n int) error {
	const perChat, batch = 100, 500
	if err := store.NewAgents(db).Insert(ctx, agents.Bot{ID: bot, UUID: bot + "-uuid", ProjectID: "p", Subdomain: bot}, outbox.New(ctx, outbox.BotCreated, "p", bot, nil)); err != nil {
		return err
	}
	tail := func(context.Context, uint64, time.Time, func(context.Context, []stats.Delivery) error) error {
		return nil
	}
	rec := stats.NewRecorder(store.NewStats(db), store.NewAgents(db), store.NewChats(db), tail, "bench", time.Now(), slog.New(slog.DiscardHandler))
	content := strings.Repeat("A question about the shop's opening hours. ", 4)
	var events, votes []stats.Delivery
	deliver := func(d *[]stats.Delivery, typ string, m chats.Message) error {
		statsBenchSeq++
		*d = append(*d, stats.Delivery{Seq: statsBenchSeq, Event: outbox.New(ctx, typ, "p", bot, chats.EventOf(m))})
		if len(*d) < batch {
			return nil
		}
		err := rec.Record(ctx, *d)
		*d = (*d)[:0]
		return err
	}
	for i := 1; i <= n; i++ {
		c, seq := (i-1)/perChat, (i-1)%perChat+1
		at := statsBenchAt(i, n)
		id := fmt.Sprintf("%s-chat-%d", bot, c)
		m := chats.Message{UUID: fmt.Sprintf("%s-%d", id, seq), ChatID: id, Seq: seq, Role: chats.RoleUser, Content: content,
			Model: "gpt-4o-mini", ReasoningType: "standard", Tokens: 40, CreditUsed: "0", EstimatedCost: "0.000000", EstimatedTimeMS: "0",
			User: chats.User{UUID: fmt.Sprintf("acc-%d", c%50)}, CreatedAt: at, UpdatedAt: at}
		if seq%2 == 0 {
			m.Role, m.Tokens, m.CreditUsed, m.EstimatedCost, m.EstimatedTimeMS = chats.RoleAgent, 120, "1", "0.000078", fmt.Sprint(300+i%900)
			m.FirstTokenMS = int64(100 + i%400)
		}
		if err := deliver(&events, outbox.ChatMessageCreated, m); err != nil {
			return err
		}
		if m.Upvotes, m.Downvotes = i%7/6, i%11/10; m.Role == chats.RoleAgent && m.Upvotes+m.Downvotes > 0 {
			if err := deliver(&votes, outbox.ChatMessageUpdated, m); err != nil {
				return err
			}
		}
	}
	for _, d := range [][]stats.Delivery{events, votes} {
		if len(d) > 0 {
			if err := rec.Record(ctx, d); err != nil {
				return err
			}
		}
	}
	return seedStatsBenchRuns(ctx, db, bot, min(n, statsBenchMaxRuns))
}

// statsBenchMaxRuns bounds the messages the other records are seeded for: the calls over tool
// calls and runs read those records, not hours, and are measured at up to 10,000 tool calls.
const statsBenchMaxRuns = 100_000

// seedStatsBenchRuns stores the agent's other records: a tool call every 10 messages (a tenth
// of them failed), an agent run and a workflow run every 50 (a fifth of them failed), over the
// same 45 days.
func seedStatsBenchRuns(ctx context.Context, db *mongo.Database, bot string, n int) error {
	at := func(i, every int) time.Time {
		return statsBenchAt(i*every, n)
	}
	var calls, runs, flows []any
	for i := range n / 10 {
		c := tools.Call{ID: fmt.Sprintf("%s-call-%d", bot, i), ProjectID: "p", BotID: bot, ToolID: fmt.Sprint("tool-", i%5), Operation: "get",
			Outcome: tools.OutcomeOK, DurationMS: int64(20 + i%300), At: at(i, 10)}
		if i%10 == 0 {
			c.Outcome = tools.OutcomeFailed
		}
		calls = append(calls, c)
	}
	for i := range n / 50 {
		started, ended := at(i, 50), at(i, 50).Add(time.Duration(100+i%500)*time.Millisecond)
		r := agentruns.Execution{ID: fmt.Sprintf("%s-run-%d", bot, i), ProjectID: "p", BotID: bot, Status: agentruns.StatusDone,
			Cycles: make([]agentruns.Cycle, 1+i%4), CreatedAt: started}
		f := workflows.Run{UUID: fmt.Sprintf("%s-flow-%d", bot, i), ProjectID: "p", BotID: bot, WorkflowID: fmt.Sprint("flow-", i%3),
			Status: workflows.RunSucceeded, CreatedAt: started, StartedAt: &started, EndedAt: &ended}
		if i%5 == 0 {
			r.Status, r.Log = agentruns.StatusFailed, []agentruns.Entry{{Seq: 1, Event: agentruns.EventError, Data: `{"kind":"unavailable","code":"provider_unavailable","message":"down"}`}}
			f.Status = workflows.RunFailed
		}
		runs, flows = append(runs, r), append(flows, f)
	}
	for coll, docs := range map[string][]any{"tool_calls": calls, "executions_finished": runs, "workflow_runs": flows} {
		if len(docs) > 0 {
			if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkStats times each statistics call on an agent of -stats.messages messages against a
// plain count of the collection it reads: the agent's hours for the calls over messages, its
// tool calls, workflow runs and ended agent runs for the others.
func BenchmarkStats(b *testing.B) {
	db := statsBenchDB(b, *statsBenchMessages)
	ctx := context.Background()
	svc := stats.NewService(store.NewStats(db))
	w, err := stats.ParseWindow(statsBenchBase.Format(time.RFC3339), statsBenchBase.AddDate(0, 0, 30).Format(time.RFC3339), "day", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	count := func(coll string) func() error {
		return func() error {
			_, err := db.Collection(coll).CountDocuments(ctx, bson.D{{Key: "project_id", Value: "p"}, {Key: "bot_id", Value: "b"}})
			return err
		}
	}
	for _, call := range []struct {
		name string
		read func() error
	}{
		{"Baseline/CountHours", count("stat_hours")},
		{"Summary", func() error { _, err := svc.Summary(ctx, "p", "b", w); return err }},
		{"Votes", func() error { _, err := svc.Votes(ctx, "p", "b", w); return err }},
		{"Performance", func() error { _, err := svc.Performance(ctx, "p", "b", w); return err }},
		{"Behavior", func() error { _, err := svc.Behavior(ctx, "p", "b", w); return err }},
		{"ReasoningSummary", func() error { _, err := svc.Reasoning(ctx, "p", "b", w); return err }},
		{"Dashboard", func() error { _, err := svc.Dashboard(ctx, "p", "b", w); return err }},
		{"Baseline/CountToolCalls", count("tool_calls")},
		{"Tools", func() error { _, err := svc.Tools(ctx, "p", "b", w); return err }},
		{"Baseline/CountWorkflowRuns", count("workflow_runs")},
		{"Workflows", func() error { _, err := svc.Workflows(ctx, "p", "b", w); return err }},
		{"Baseline/CountAgentRuns", count("executions_finished")},
		{"Errors", func() error { _, err := svc.Errors(ctx, "p", "b", w); return err }},
	} {
		b.Run(call.name, func(b *testing.B) {
			for b.Loop() {
				if err := call.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
