package store_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

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

// statsMonday is the first day of the seeded history, a Monday.
var statsMonday = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// history records the events of an agent's chats, in order, with a real recorder on the store.
type history struct {
	t        *testing.T
	recorder *stats.Recorder
	seq      uint64
}

// newHistory returns the history of db, where agent "b" of project "p" exists (events of any
// other agent are not kept).
func newHistory(t *testing.T, db *mongo.Database) *history {
	t.Helper()
	ctx := context.Background()
	if err := store.NewAgents(db).Insert(ctx, agents.Bot{ID: "b", UUID: "b-uuid", ProjectID: "p"}, outbox.New(ctx, outbox.BotCreated, "p", "b", nil)); err != nil {
		t.Fatal(err)
	}
	tail := func(context.Context, uint64, time.Time, func(context.Context, []stats.Delivery) error) error {
		return nil
	}
	return &history{t: t, recorder: stats.NewRecorder(store.NewStats(db), store.NewAgents(db), store.NewChats(db), tail, "test", time.Now(),
		slog.New(slog.DiscardHandler))}
}

// record records one batch of events about messages, each the next of the stream.
func (h *history) record(typ, bot string, msgs ...chats.Message) {
	h.t.Helper()
	var batch []stats.Delivery
	for _, m := range msgs {
		h.seq++
		batch = append(batch, stats.Delivery{Seq: h.seq, Event: outbox.New(context.Background(), typ, "p", bot, chats.EventOf(m))})
	}
	if err := h.recorder.Record(context.Background(), batch); err != nil {
		h.t.Fatal(err)
	}
}

// seedStatsHistory records an agent's history: chat A (the account's, 40 messages a minute
// apart from statsMonday), chat B (end user sub1, 2 messages a day later), chat C (end user
// sub2, 2 messages 8 days later) and a chat of another agent. A's answers took 20, 40, ... 400
// ms in standard mode; its message 1 has an upvote, 4 two downvotes, 6 one of each, 40 a
// downvote. B's answer took 1 s in agent mode and has two upvotes; C's 3 s in agent mode. The
// messages are recorded in batches of 7 and the votes after them; every batch is then
// delivered again, which counts nothing twice.
func seedStatsHistory(t *testing.T, db *mongo.Database) *history {
	t.Helper()
	h := newHistory(t, db)
	var created, voted []chats.Message
	var bots []string
	say := func(chatID, bot, subscriber string, at time.Time, turns int, tweak func(i int, m *chats.Message)) {
		for i := range turns * 2 {
			m := chats.Message{UUID: fmt.Sprintf("%s-%d", chatID, i+1), ChatID: chatID, Role: chats.RoleUser, ReasoningType: "standard",
				CreditUsed: "0", EstimatedCost: "0.000000", EstimatedTimeMS: "0", User: chats.User{UUID: cmp.Or(subscriber, "acc1")},
				CreatedAt: at.Add(time.Duration(i) * time.Minute)}
			if i%2 == 1 {
				m.Role, m.User = chats.RoleAgent, chats.User{UUID: "bot"}
			}
			tweak(i, &m)
			if m.Upvotes+m.Downvotes > 0 {
				voted = append(voted, m)
			}
			m.Upvotes, m.Downvotes = 0, 0
			created, bots = append(created, m), append(bots, bot)
		}
	}
	answer := func(userTokens, agentTokens int, credit, cost, ms, mode string, votes map[int][2]int) func(int, *chats.Message) {
		return func(i int, m *chats.Message) {
			m.Tokens = userTokens
			if m.Role == chats.RoleAgent {
				m.Tokens, m.CreditUsed, m.EstimatedCost, m.EstimatedTimeMS, m.ReasoningType = agentTokens, credit, cost, ms, mode
			}
			if ms == "" {
				m.EstimatedTimeMS = fmt.Sprint(10 * (i + 1))
			}
			m.Upvotes, m.Downvotes = votes[i][0], votes[i][1]
		}
	}
	say("A", "b", "", statsMonday, 20, answer(2, 10, "0.5", "0.000100", "", "standard", map[int][2]int{0: {1, 0}, 3: {0, 2}, 5: {1, 1}, 39: {0, 1}}))
	say("B", "b", "sub1", statsMonday.Add(24*time.Hour), 1, answer(3, 7, "1", "0.002000", "1000", "agent", map[int][2]int{1: {2, 0}}))
	say("C", "b", "sub2", statsMonday.Add(8*24*time.Hour), 1, answer(4, 6, "2", "0.000500", "3000", "agent", nil))
	say("E", "other", "", statsMonday, 1, answer(100, 100, "9", "9", "9", "agent", map[int][2]int{1: {0, 9}}))
	for i := 0; i < len(created); {
		end := i + 1
		for end < len(created) && end-i < 7 && bots[end] == bots[i] {
			end++
		}
		first := h.seq
		h.record(outbox.ChatMessageCreated, bots[i], created[i:end]...)
		h.seq = first
		h.record(outbox.ChatMessageCreated, bots[i], created[i:end]...)
		i = end
	}
	for _, m := range voted {
		bot := "b"
		if m.ChatID == "E" {
			bot = "other"
		}
		h.record(outbox.ChatMessageUpdated, bot, m)
	}
	return h
}

// The summary counts each message of the agent written in the window's hours once, however
// often its event was delivered.
func TestStatsSummaryOfASeededHistory(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	seedStatsHistory(t, db)
	svc := stats.NewService(store.NewStats(db))
	day := 24 * time.Hour
	at := func(d time.Duration) string { return statsMonday.Add(d).Format(time.RFC3339) }
	all := stats.Totals{Chats: 3, Messages: 44, UserMessages: 22, AgentMessages: 22, Users: 3, CreditsUsed: 13, Tokens: 260, EstimatedCost: 0.0045}
	chatB := stats.Totals{Chats: 1, Messages: 2, UserMessages: 1, AgentMessages: 1, Users: 1, CreditsUsed: 1, Tokens: 10, EstimatedCost: 0.002}
	chatA := stats.Totals{Chats: 1, Messages: 40, UserMessages: 20, AgentMessages: 20, Users: 1, CreditsUsed: 10, Tokens: 240, EstimatedCost: 0.002}
	for _, tc := range []struct {
		name, from, to, interval string
		want                     stats.Totals
		series                   []stats.Totals
	}{
		{name: "all", from: at(0), to: at(30 * day), want: all},
		{name: "default window", to: at(29 * day), want: all},
		{name: "one day", from: at(day), to: at(2 * day), want: chatB},
		{name: "part of an hour counts the hour", from: at(10 * time.Minute), to: at(20 * time.Minute), want: chatA},
		{name: "by day", from: at(0), to: at(3 * day), interval: "day",
			want:   stats.Totals{Chats: 2, Messages: 42, UserMessages: 21, AgentMessages: 21, Users: 2, CreditsUsed: 11, Tokens: 250, EstimatedCost: 0.004},
			series: []stats.Totals{chatA, chatB, {}}},
		{name: "by week", from: at(0), to: at(14 * day), interval: "week", want: all,
			series: []stats.Totals{{Chats: 2, Messages: 42, UserMessages: 21, AgentMessages: 21, Users: 2, CreditsUsed: 11, Tokens: 250, EstimatedCost: 0.004},
				{Chats: 1, Messages: 2, UserMessages: 1, AgentMessages: 1, Users: 1, CreditsUsed: 2, Tokens: 10, EstimatedCost: 0.0005}}},
		{name: "before", from: at(-2 * day), to: at(0), want: stats.Totals{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := stats.ParseWindow(tc.from, tc.to, tc.interval, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r, err := svc.Summary(context.Background(), "p", "b", w)
			if err != nil {
				t.Fatal(err)
			}
			// The facts record no version: no totals by version.
			unversioned := func(t stats.Totals) stats.Totals {
				if len(t.Versions) == 0 {
					t.Versions = nil
				}
				return t
			}
			if !reflect.DeepEqual(unversioned(r.Stats), tc.want) {
				t.Fatalf("summary %+v, want %+v", r.Stats, tc.want)
			}
			if len(r.Series) != len(tc.series) {
				t.Fatalf("%d buckets, want %d", len(r.Series), len(tc.series))
			}
			for i, b := range r.Series {
				if !reflect.DeepEqual(unversioned(b.Stats), tc.series[i]) || !b.Start.Equal(w.From.AddDate(0, 0, i*map[string]int{"day": 1, "week": 7}[tc.interval])) {
					t.Fatalf("bucket %d %v %+v, want %+v", i, b.Start, b.Stats, tc.series[i])
				}
			}
		})
	}
}

// Votes, performance and reasoning count each answer of the window once, as its events say.
// Percentiles of times from 100 ms on are their buckets' starts, within 2% below the time
// (400 -> 399, 1000 -> 994, 3000 -> 2955); the mean and the largest are exact.
func TestStatsOfAnswersOfASeededHistory(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	seedStatsHistory(t, db)
	svc := stats.NewService(store.NewStats(db))
	ctx, day := context.Background(), 24*time.Hour
	at := func(d time.Duration) string { return statsMonday.Add(d).Format(time.RFC3339) }
	worst := func(ids ...string) []stats.Rated {
		out := []stats.Rated{}
		votes := map[string][3]int{"A-4": {0, 2, 3}, "A-6": {1, 1, 5}, "A-40": {0, 1, 39}}
		for _, id := range ids {
			v := votes[id]
			out = append(out, stats.Rated{MessageID: id, ChatID: "A", Upvotes: v[0], Downvotes: v[1], CreatedAt: statsMonday.Add(time.Duration(v[2]) * time.Minute)})
		}
		return out
	}
	for _, tc := range []struct {
		name, from, to string
		votes          stats.Votes
		reply          stats.Latency
		modes          map[string]int
		credits        map[string]float64
	}{
		{name: "all", from: at(0), to: at(30 * day),
			votes: stats.Votes{Upvotes: 4, Downvotes: 4, Rated: 5, Satisfaction: 0.5, Worst: worst("A-4", "A-40", "A-6")},
			reply: stats.Latency{Count: 22, Avg: 372.727273, P50: 220, P90: 399, P95: 994, P99: 2955, Max: 3000},
			modes: map[string]int{"standard": 20, "agent": 2}, credits: map[string]float64{"standard": 10, "agent": 3}},
		{name: "first 10 minutes: the whole hour", from: at(0), to: at(10 * time.Minute),
			votes: stats.Votes{Upvotes: 2, Downvotes: 4, Rated: 4, Satisfaction: 0.333333, Worst: worst("A-4", "A-40", "A-6")},
			reply: stats.Latency{Count: 20, Avg: 210, P50: 199, P90: 355, P95: 376, P99: 399, Max: 400},
			modes: map[string]int{"standard": 20}, credits: map[string]float64{"standard": 10}},
		{name: "chat C's day", from: at(8 * day), to: at(9 * day),
			votes: stats.Votes{Worst: worst()},
			reply: stats.Latency{Count: 1, Avg: 3000, P50: 2955, P90: 2955, P95: 2955, P99: 2955, Max: 3000},
			modes: map[string]int{"agent": 1}, credits: map[string]float64{"agent": 2}},
		{name: "empty", from: at(-day), to: at(0), votes: stats.Votes{Worst: worst()}, modes: map[string]int{}, credits: map[string]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := stats.ParseWindow(tc.from, tc.to, "", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			d, err := svc.Dashboard(ctx, "p", "b", w)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Stats; !reflect.DeepEqual(got.Votes, tc.votes) || got.Performance.ReplyMS != tc.reply ||
				!reflect.DeepEqual(got.Reasoning, stats.Reasoning{Modes: tc.modes, Credits: tc.credits, Runs: stats.Runs{ByStatus: map[string]int{}}}) {
				t.Fatalf("votes %+v\nreply %+v\nreasoning %+v\nwant %+v\n%+v\n%v %v", got.Votes, got.Performance.ReplyMS, got.Reasoning, tc.votes, tc.reply, tc.modes, tc.credits)
			}
			v, err := svc.Votes(ctx, "p", "b", w)
			if err != nil || !reflect.DeepEqual(v.Stats, tc.votes) {
				t.Fatalf("votes alone %+v, %v", v.Stats, err)
			}
			p, err := svc.Performance(ctx, "p", "b", w)
			if err != nil || p.Stats.ReplyMS != tc.reply {
				t.Fatalf("performance alone %+v, %v", p.Stats, err)
			}
			r, err := svc.Reasoning(ctx, "p", "b", w)
			if err != nil || !reflect.DeepEqual(r.Stats, d.Stats.Reasoning) {
				t.Fatalf("reasoning alone %+v, %v", r.Stats, err)
			}
		})
	}
}

// The tool figures count the agent's recorded calls of the window by tool and operation.
func TestStatsOfToolCalls(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	ctx, rec := context.Background(), store.NewTools(db)
	for i, c := range []tools.Call{
		{BotID: "b", ToolID: "crm", Operation: "find", Outcome: tools.OutcomeOK, DurationMS: 10},
		{BotID: "b", ToolID: "crm", Operation: "find", Outcome: tools.OutcomeOK, DurationMS: 30},
		{BotID: "b", ToolID: "crm", Operation: "find", Outcome: tools.OutcomeToolError, DurationMS: 20},
		{BotID: "b", ToolID: "crm", Operation: "find", Outcome: tools.OutcomeFailed, DurationMS: 40},
		{BotID: "b", ToolID: "web", Operation: "get", Outcome: tools.OutcomeOK, DurationMS: 100},
		{BotID: "b", ToolID: "web", Operation: "get", Outcome: tools.OutcomeOK, DurationMS: 300, At: statsMonday.Add(48 * time.Hour)},
		{BotID: "other", ToolID: "web", Operation: "get", Outcome: tools.OutcomeFailed, DurationMS: 900},
	} {
		c.ID, c.ProjectID = fmt.Sprint("call", i), "p"
		if c.At.IsZero() {
			c.At = statsMonday.Add(time.Duration(i) * time.Minute)
		}
		if err := rec.RecordCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	svc := stats.NewService(store.NewStats(db))
	crm := stats.ToolUse{ToolID: "crm", Operation: "find", Calls: 4, Errors: 2, ErrorRate: 0.5,
		Outcomes:   map[string]int{tools.OutcomeOK: 2, tools.OutcomeToolError: 1, tools.OutcomeFailed: 1},
		DurationMS: stats.Latency{Count: 4, Avg: 25, P50: 20, P90: 40, P95: 40, P99: 40, Max: 40}}
	web := func(n int, ms ...float64) stats.ToolUse {
		u := stats.ToolUse{ToolID: "web", Operation: "get", Calls: n, Outcomes: map[string]int{tools.OutcomeOK: n}}
		sum := 0.0
		for _, x := range ms {
			sum += x
		}
		u.DurationMS = stats.Latency{Count: n, Avg: sum / float64(n), P50: ms[(n+1)/2-1], P90: ms[n-1], P95: ms[n-1], P99: ms[n-1], Max: ms[n-1]}
		return u
	}
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     stats.Tools
	}{
		{"all", statsMonday, statsMonday.AddDate(0, 0, 7), stats.Tools{Calls: 6, Errors: 2, Tools: []stats.ToolUse{crm, web(2, 100, 300)}}},
		{"first day", statsMonday, statsMonday.AddDate(0, 0, 1), stats.Tools{Calls: 5, Errors: 2, Tools: []stats.ToolUse{crm, web(1, 100)}}},
		{"none", statsMonday.AddDate(0, 0, -1), statsMonday, stats.Tools{Tools: []stats.ToolUse{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := stats.ParseWindow(tc.from.Format(time.RFC3339), tc.to.Format(time.RFC3339), "", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r, err := svc.Tools(ctx, "p", "b", w)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Stats, tc.want) {
				t.Fatalf("tools %+v\nwant  %+v", r.Stats, tc.want)
			}
		})
	}
}

// Workflow runs, agent runs and errors count the agent's runs of the window as they are stored.
func TestStatsOfRuns(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	ctx := context.Background()
	min := func(m int) time.Time { return statsMonday.Add(time.Duration(m) * time.Minute) }
	ptr := func(t time.Time) *time.Time { return &t }
	failed := func(code string) []agentruns.Entry {
		return []agentruns.Entry{{Seq: 1, Event: agentruns.EventError, Data: fmt.Sprintf(`{"kind":"unavailable","code":%q,"message":"no"}`, code)}}
	}
	cycles := func(n int) []agentruns.Cycle { return make([]agentruns.Cycle, n) }
	insert := func(coll string, docs ...any) {
		if _, err := db.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	run := func(id, bot, status string, n int, log []agentruns.Entry, at time.Time) agentruns.Execution {
		return agentruns.Execution{ID: id, ProjectID: "p", BotID: bot, Status: status, Cycles: cycles(n), Log: log, CreatedAt: at}
	}
	insert("executions_finished", run("r1", "b", "succeeded", 2, nil, min(0)), run("r2", "b", "succeeded", 4, nil, min(1)),
		run("r3", "b", "failed", 1, failed("provider_unavailable"), min(2)), run("r4", "b", "failed", 3, failed("provider_unavailable"), min(3)),
		run("r5", "b", "failed", 6, failed("run_capped"), statsMonday.AddDate(0, 0, 2)), run("x1", "other", "failed", 1, failed("x"), min(0)))
	insert("executions", run("r6", "b", "running", 1, nil, min(4)), run("r4", "b", "failed", 3, failed("provider_unavailable"), min(3)))
	wf := func(id, workflow, status string, at time.Time, took time.Duration) workflows.Run {
		r := workflows.Run{UUID: id, ProjectID: "p", BotID: "b", WorkflowID: workflow, Status: status, CreatedAt: at}
		if took > 0 {
			r.StartedAt, r.EndedAt = ptr(at), ptr(at.Add(took))
		}
		return r
	}
	insert("workflow_runs", wf("w1", "greet", "succeeded", min(0), 100*time.Millisecond), wf("w2", "greet", "succeeded", min(1), 300*time.Millisecond),
		wf("w3", "greet", "failed", min(2), 200*time.Millisecond), wf("w4", "notify", "queued", min(3), 0),
		wf("w5", "notify", "failed", statsMonday.AddDate(0, 0, 2), 50*time.Millisecond))
	other := wf("w6", "greet", "failed", min(0), time.Second)
	other.BotID = "other"
	insert("workflow_runs", other)
	// A skipped log is not a run.
	insert("workflow_runs", wf("w7", "greet", workflows.RunSkipped, min(4), 0))
	if err := store.NewTools(db).RecordCall(ctx, tools.Call{ID: "c1", ProjectID: "p", BotID: "b", ToolID: "crm", Outcome: tools.OutcomeToolError, At: min(5)}); err != nil {
		t.Fatal(err)
	}
	svc := stats.NewService(store.NewStats(db))
	for _, tc := range []struct {
		name      string
		to        time.Time
		runs      stats.Runs
		workflows stats.Workflows
		errors    stats.Errors
	}{
		{name: "first day", to: statsMonday.AddDate(0, 0, 1),
			runs: stats.Runs{Runs: 5, ByStatus: map[string]int{"succeeded": 2, "failed": 2, "running": 1},
				Cycles: stats.Latency{Count: 4, Avg: 2.5, P50: 2, P90: 4, P95: 4, P99: 4, Max: 4}},
			workflows: stats.Workflows{Runs: 4, ByStatus: map[string]int{"succeeded": 2, "failed": 1, "queued": 1}, Workflows: []stats.WorkflowUse{
				{WorkflowID: "greet", Runs: 3, ByStatus: map[string]int{"succeeded": 2, "failed": 1}, DurationMS: stats.Latency{Count: 3, Avg: 200, P50: 200, P90: 300, P95: 300, P99: 300, Max: 300}},
				{WorkflowID: "notify", Runs: 1, ByStatus: map[string]int{"queued": 1}}}},
			errors: stats.Errors{Errors: 4, ByCode: []stats.ErrorCount{{Source: "agent_run", Code: "provider_unavailable", Count: 2},
				{Source: "tool_call", Code: "tool_error", Count: 1}, {Source: "workflow_run", Code: "failed", Count: 1}}}},
		{name: "week", to: statsMonday.AddDate(0, 0, 7),
			runs: stats.Runs{Runs: 6, ByStatus: map[string]int{"succeeded": 2, "failed": 3, "running": 1},
				Cycles: stats.Latency{Count: 5, Avg: 3.2, P50: 3, P90: 6, P95: 6, P99: 6, Max: 6}},
			workflows: stats.Workflows{Runs: 5, ByStatus: map[string]int{"succeeded": 2, "failed": 2, "queued": 1}, Workflows: []stats.WorkflowUse{
				{WorkflowID: "greet", Runs: 3, ByStatus: map[string]int{"succeeded": 2, "failed": 1}, DurationMS: stats.Latency{Count: 3, Avg: 200, P50: 200, P90: 300, P95: 300, P99: 300, Max: 300}},
				{WorkflowID: "notify", Runs: 2, ByStatus: map[string]int{"queued": 1, "failed": 1}, DurationMS: stats.Latency{Count: 1, Avg: 50, P50: 50, P90: 50, P95: 50, P99: 50, Max: 50}}}},
			errors: stats.Errors{Errors: 6, ByCode: []stats.ErrorCount{{Source: "agent_run", Code: "provider_unavailable", Count: 2},
				{Source: "workflow_run", Code: "failed", Count: 2}, {Source: "agent_run", Code: "run_capped", Count: 1}, {Source: "tool_call", Code: "tool_error", Count: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := stats.ParseWindow(statsMonday.Format(time.RFC3339), tc.to.Format(time.RFC3339), "", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r, err := svc.Reasoning(ctx, "p", "b", w)
			if err != nil || !reflect.DeepEqual(r.Stats.Runs, tc.runs) {
				t.Fatalf("agent runs %+v, %v\nwant %+v", r.Stats.Runs, err, tc.runs)
			}
			wr, err := svc.Workflows(ctx, "p", "b", w)
			if err != nil || !reflect.DeepEqual(wr.Stats, tc.workflows) {
				t.Fatalf("workflows %+v, %v\nwant %+v", wr.Stats, err, tc.workflows)
			}
			er, err := svc.Errors(ctx, "p", "b", w)
			if err != nil || !reflect.DeepEqual(er.Stats, tc.errors) {
				t.Fatalf("errors %+v, %v\nwant %+v", er.Stats, err, tc.errors)
			}
		})
	}
}

// Behavior counts conversations, their lengths, the users who came back and when users write.
func TestStatsOfBehaviorOfASeededHistory(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	h := seedStatsHistory(t, db)
	// The account comes back in a chat of its own on Wednesday afternoon.
	ctx, at := context.Background(), statsMonday.Add(2*24*time.Hour+13*time.Hour)
	h.record(outbox.ChatMessageCreated, "b", chats.Message{UUID: "F-1", ChatID: "F", Role: chats.RoleUser, User: chats.User{UUID: "acc1"}, CreatedAt: at},
		chats.Message{UUID: "F-2", ChatID: "F", Role: chats.RoleAgent, User: chats.User{UUID: "bot"}, CreatedAt: at.Add(time.Minute)})
	svc := stats.NewService(store.NewStats(db))
	hours := func(kv map[int]int, n int) []int {
		out := make([]int, n)
		for k, v := range kv {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		want     stats.Behavior
	}{
		{name: "all", to: 30 * 24 * time.Hour, want: stats.Behavior{Conversations: 4, Users: 3, ReturningUsers: 1,
			MessagesPerConversation: 11.5, UserMessagesPerConversation: 5.75, LongestConversation: 40,
			ByHour: hours(map[int]int{0: 22, 13: 1}, 24), ByWeekday: hours(map[int]int{1: 20, 2: 2, 3: 1}, 7)}},
		{name: "the first week's Tuesday on", from: 24 * time.Hour, to: 7 * 24 * time.Hour, want: stats.Behavior{Conversations: 2, Users: 2,
			MessagesPerConversation: 2, UserMessagesPerConversation: 1, LongestConversation: 2,
			ByHour: hours(map[int]int{0: 1, 13: 1}, 24), ByWeekday: hours(map[int]int{2: 1, 3: 1}, 7)}},
		{name: "empty", from: -24 * time.Hour, to: 0, want: stats.Behavior{ByHour: hours(nil, 24), ByWeekday: hours(nil, 7)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := stats.ParseWindow(statsMonday.Add(tc.from).Format(time.RFC3339), statsMonday.Add(tc.to).Format(time.RFC3339), "", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			r, err := svc.Behavior(ctx, "p", "b", w)
			if err != nil || !reflect.DeepEqual(r.Stats, tc.want) {
				t.Fatalf("behavior %+v (%v), want %+v", r.Stats, err, tc.want)
			}
		})
	}
}

// A message's votes count as its last vote event says, each event once, and a deleted
// message's votes no longer count.
func TestStatsVotesFollowTheirEvents(t *testing.T) {
	t.Parallel()
	db := testenv.Mongo(t)
	h := newHistory(t, db)
	svc := stats.NewService(store.NewStats(db))
	ctx := context.Background()
	w, err := stats.ParseWindow(statsMonday.Format(time.RFC3339), statsMonday.Add(time.Hour).Format(time.RFC3339), "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	answer := func(id string, up, down int) chats.Message {
		return chats.Message{UUID: id, ChatID: "A", Role: chats.RoleAgent, Upvotes: up, Downvotes: down, CreatedAt: statsMonday.Add(time.Minute)}
	}
	h.record(outbox.ChatMessageCreated, "b", answer("A-1", 0, 0), answer("A-2", 0, 0))
	for _, step := range []struct {
		name   string
		typ    string
		msgs   []chats.Message
		again  bool
		want   stats.Votes
		worstN int
	}{
		{name: "an upvote", typ: outbox.ChatMessageUpdated, msgs: []chats.Message{answer("A-1", 1, 0)},
			want: stats.Votes{Upvotes: 1, Rated: 1, Satisfaction: 1}},
		{name: "turned down, and a second voter's down in the same batch", typ: outbox.ChatMessageUpdated,
			msgs: []chats.Message{answer("A-1", 0, 1), answer("A-1", 0, 2), answer("A-2", 1, 1)},
			want: stats.Votes{Upvotes: 1, Downvotes: 3, Rated: 2, Satisfaction: 0.25}, worstN: 2},
		{name: "delivered again", typ: outbox.ChatMessageUpdated, again: true,
			msgs: []chats.Message{answer("A-1", 0, 1), answer("A-1", 0, 2), answer("A-2", 1, 1)},
			want: stats.Votes{Upvotes: 1, Downvotes: 3, Rated: 2, Satisfaction: 0.25}, worstN: 2},
		{name: "withdrawn", typ: outbox.ChatMessageUpdated, msgs: []chats.Message{answer("A-2", 0, 0)},
			want: stats.Votes{Downvotes: 2, Rated: 1}, worstN: 1},
		{name: "the message deleted", typ: outbox.ChatMessageDeleted, msgs: []chats.Message{answer("A-1", 0, 2)},
			want: stats.Votes{}},
	} {
		if step.again {
			h.seq -= uint64(len(step.msgs))
		}
		h.record(step.typ, "b", step.msgs...)
		v, err := svc.Votes(ctx, "p", "b", w)
		if err != nil {
			t.Fatal(err)
		}
		got := v.Stats
		if len(got.Worst) != step.worstN || (step.worstN > 0 && got.Worst[0].MessageID != "A-1") {
			t.Fatalf("%s: worst rated %+v, want %d with A-1 first", step.name, got.Worst, step.worstN)
		}
		got.Worst, step.want.Worst = nil, nil
		if !reflect.DeepEqual(got, step.want) {
			t.Fatalf("%s: votes %+v, want %+v", step.name, got, step.want)
		}
	}
}
