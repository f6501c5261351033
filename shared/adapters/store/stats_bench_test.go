package store_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/stats"
	"github.com/agentplane/agentplane/shared/tools"
	"github.com/agentplane/agentplane/shared/workflows"
)

var statsBenchMessages = flag.Int("stats.messages", 10_000, "messages of the agent the statistics benchmarks read")

// statsBenchBase is when the benchmarks' history starts: 45 days of messages, of which the
// benchmarks' window holds the first 30.
var statsBenchBase = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// statsBench is the agent's seeded history, stored once per process (in a database of its
// own, kept for the process's later benchmarks).
var statsBench struct {
	once sync.Once
	db   *mongo.Database
	err  error
}

// statsBenchDB returns a database holding an agent ("p", "b") with n messages in chats of 100
// (as the store keeps them: 20 recent ones in the chat's document, the others in two pages), a
// message every 4 s from statsBenchBase, with a second agent of as many messages beside it.
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

func seedStatsBench(ctx context.Context, db *mongo.Database, bot string, n int) error {
	const perChat, recent = 100, 20
	content := strings.Repeat("A question about the shop's opening hours. ", 4)
	var chatDocs, pageDocs []any
	flush := func() error {
		for coll, docs := range map[string]*[]any{"chats": &chatDocs, "chat_messages": &pageDocs} {
			if len(*docs) > 0 {
				if _, err := db.Collection(coll).InsertMany(ctx, *docs); err != nil {
					return err
				}
			}
			*docs = (*docs)[:0]
		}
		return nil
	}
	for c := 0; c*perChat < n; c++ {
		id := fmt.Sprintf("%s-chat-%d", bot, c)
		msgs := make([]chats.Message, 0, perChat)
		for seq := 1; seq <= perChat && c*perChat+seq <= n; seq++ {
			i := c*perChat + seq
			at := statsBenchBase.Add(time.Duration(i) * 45 * 24 * time.Hour / time.Duration(n))
			m := chats.Message{UUID: fmt.Sprintf("%s-%d", id, seq), ChatID: id, Seq: seq, Role: chats.RoleUser, Content: content,
				Model: "gpt-4o-mini", ReasoningType: "standard", Tokens: 40, CreditUsed: "0", EstimatedCost: "0.000000", EstimatedTimeMS: "0",
				User: chats.User{UUID: fmt.Sprintf("acc-%d", c%50)}, CreatedAt: at, UpdatedAt: at}
			if seq%2 == 0 {
				m.Role, m.Tokens, m.CreditUsed, m.EstimatedCost, m.EstimatedTimeMS = chats.RoleAgent, 120, "1", "0.000078", fmt.Sprint(300+i%900)
				m.Upvotes, m.Downvotes = i%7/6, i%11/10
			}
			msgs = append(msgs, m)
		}
		from := max(len(msgs)-recent, 0)
		chatDocs = append(chatDocs, bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: "p"}, {Key: "bot_id", Value: bot},
			{Key: "messages", Value: len(msgs)}, {Key: "created_at", Value: msgs[0].CreatedAt}, {Key: "updated_at", Value: msgs[len(msgs)-1].CreatedAt},
			{Key: "recent", Value: msgs[from:]}, {Key: "recent_from", Value: from + 1}, {Key: "rev", Value: int64(len(msgs))}})
		for p := 0; p*50 < from; p++ {
			pageDocs = append(pageDocs, bson.D{{Key: "_id", Value: fmt.Sprintf("%s:%d", id, p)}, {Key: "chat_id", Value: id},
				{Key: "project_id", Value: "p"}, {Key: "bot_id", Value: bot}, {Key: "messages", Value: msgs[p*50 : min(p*50+50, from)]}, {Key: "rev", Value: int64(1)}})
		}
		if len(pageDocs) >= 200 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return seedStatsBenchRuns(ctx, db, bot, n)
}

// seedStatsBenchRuns stores the agent's other records: a tool call every 10 messages (a tenth
// of them failed), an agent run and a workflow run every 50 (a fifth of them failed), over the
// same 45 days.
func seedStatsBenchRuns(ctx context.Context, db *mongo.Database, bot string, n int) error {
	at := func(i, every int) time.Time {
		return statsBenchBase.Add(time.Duration(i*every) * 45 * 24 * time.Hour / time.Duration(n))
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
// plain count of the collection it reads most: the agent's message pages for the calls over
// messages, its tool calls, workflow runs and ended agent runs for the others.
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
		{"Baseline/CountPages", count("chat_messages")},
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
