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
	ledger := &memLedger{hours: map[string]stats.Hourly{}}
	rec := stats.NewRecorder(ledger, store.NewAgents(db), store.NewChats(db), tail, "bench", time.Now(), slog.New(slog.DiscardHandler))
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
	if err := insertAll(ctx, db.Collection("stat_hours"), ledger.hours); err != nil {
		return err
	}
	return seedStatsBenchRuns(ctx, db, bot, min(n, statsBenchMaxRuns))
}

// memLedger keeps what the recorder folds in memory, so that a history of a million messages
// is folded by the recorder's own code in seconds and stored once (BenchmarkStatsRecord
// measures the recorder on the store).
type memLedger struct{ hours map[string]stats.Hourly }

func (m *memLedger) HoursByID(_ context.Context, ids []string) (map[string]stats.Hourly, error) {
	out := map[string]stats.Hourly{}
	for _, id := range ids {
		if h, ok := m.hours[id]; ok {
			out[id] = h
		}
	}
	return out, nil
}

func (m *memLedger) PutHour(_ context.Context, h stats.Hourly, _ uint64) (bool, error) {
	m.hours[h.ID] = h
	return true, nil
}

func (m *memLedger) Claim(context.Context, string, time.Time) (uint64, bool, error) {
	return 0, true, nil
}

func (m *memLedger) Advance(context.Context, string, uint64, time.Time) (bool, error) {
	return true, nil
}

func (m *memLedger) Release(context.Context, string) error { return nil }

// insertAll stores docs in coll, 500 at a time.
func insertAll(ctx context.Context, coll *mongo.Collection, docs map[string]stats.Hourly) error {
	var batch []any
	for _, d := range docs {
		if batch = append(batch, d); len(batch) == 500 {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		_, err := coll.InsertMany(ctx, batch)
		return err
	}
	return nil
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

// BenchmarkStatsRecord times the recorder folding a batch of 500 chat.message.created events of
// the benchmarks' agent (250 chats' turns in one hour after its history, written a millisecond
// apart: a busy agent's batch, which the stream delivers within half a second) into the store,
// against inserting 500 small documents in one command. Its batches follow each other in time,
// so the hour fills as the benchmark runs.
func BenchmarkStatsRecord(b *testing.B) {
	db := statsBenchDB(b, *statsBenchMessages)
	ctx := context.Background()
	tail := func(context.Context, uint64, time.Time, func(context.Context, []stats.Delivery) error) error {
		return nil
	}
	rec := stats.NewRecorder(store.NewStats(db), store.NewAgents(db), store.NewChats(db), tail, "bench", time.Now(), slog.New(slog.DiscardHandler))
	at := statsBenchBase.AddDate(0, 0, 50)
	batch := func() []stats.Delivery {
		out := make([]stats.Delivery, 500)
		for i := range out {
			statsBenchSeq++
			m := chats.Message{UUID: fmt.Sprint("rec-", statsBenchSeq), ChatID: fmt.Sprint("rec-chat-", statsBenchSeq/2), Role: chats.RoleUser,
				Tokens: 40, CreditUsed: "0", User: chats.User{UUID: fmt.Sprint("acc-", i%50)}, CreatedAt: at.Add(time.Duration(statsBenchSeq) * time.Millisecond)}
			if i%2 == 1 {
				m.Role, m.EstimatedTimeMS, m.FirstTokenMS = chats.RoleAgent, fmt.Sprint(300+i), int64(100+i)
			}
			out[i] = stats.Delivery{Seq: statsBenchSeq, Event: outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", chats.EventOf(m))}
		}
		return out
	}
	b.Run("Baseline/Insert500", func(b *testing.B) {
		docs := make([]any, 500)
		for b.Loop() {
			for i := range docs {
				statsBenchSeq++
				docs[i] = bson.D{{Key: "_id", Value: fmt.Sprint("ins-", statsBenchSeq)}, {Key: "bot_id", Value: "b"}, {Key: "tokens", Value: 40}}
			}
			if _, err := db.Collection("stat_bench_inserts").InsertMany(ctx, docs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Record500", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			d := batch()
			b.StartTimer()
			if err := rec.Record(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
