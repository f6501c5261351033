package api_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// stats reads one statistics call of the agent and returns its object.
func (a chatAPI) stats(t *testing.T, call, name, extra string) map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/stats/" + call + "?" + a.query(extra), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)[name].(map[string]any)
}

// statsOnce reads one statistics call of the agent until ready holds of its stats (the
// recorder folds the chats' events in after they are published), and returns its object.
func (a chatAPI) statsOnce(t *testing.T, call, name, extra string, ready func(map[string]any) bool) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; waitABit() {
		s := a.stats(t, call, name, extra)
		if ready(s["stats"].(map[string]any)) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %v after 30 s", call, s["stats"])
		}
	}
}

// statsHistory has the agent hold two chats of three turns in all, and returns the sums of
// their messages' tokens and credits as the chats' histories show them, and the agent's answers.
func statsHistory(t *testing.T, a chatAPI) (tokens, credits float64, answers []map[string]any) {
	t.Helper()
	var chatIDs []string
	for _, msg := range []map[string]any{{"message": "When does the shop open?"}, {"message": "And on Sundays?", "chat_id": ""}, {"message": "Where is it?"}} {
		if _, ok := msg["chat_id"]; ok {
			msg["chat_id"] = chatIDs[0]
		}
		res, chat := a.chat(t, msg)
		if chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		if _, ok := msg["chat_id"]; !ok {
			chatIDs = append(chatIDs, chat["chat_id"].(string))
		}
	}
	for _, id := range chatIDs {
		for _, m := range a.history(t, id, "")["conversation"].([]any) {
			m := m.(map[string]any)
			c, err := strconv.ParseFloat(m["credit_used"].(string), 64)
			if err != nil {
				t.Fatal(err)
			}
			tokens, credits = tokens+m["tokens"].(float64), credits+c
			if m["role"] == "agent" {
				answers = append(answers, m)
			}
		}
	}
	return tokens, credits, answers
}

func TestStatsSummary(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.chatBot(t, map[string]any{})
	tokens, credits, _ := statsHistory(t, a)
	a.statsOnce(t, "summary", "summary", "", func(s map[string]any) bool { return s["messages"] == 6.0 })
	today := time.Now().UTC().Truncate(24 * time.Hour)
	day, hour := today.Format(time.RFC3339), time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	for _, tc := range []struct {
		name, query     string
		messages, chats float64
		tokens, credits float64
		series          int
	}{
		{name: "last 30 days", messages: 6, chats: 2, tokens: tokens, credits: credits},
		{name: "today by hour", query: "&from=" + day + "&to=" + hour.Format(time.RFC3339) + "&interval=hour", messages: 6, chats: 2, tokens: tokens, credits: credits,
			series: int(hour.Sub(today) / time.Hour)},
		{name: "tomorrow", query: "&from=" + today.AddDate(0, 0, 1).Format(time.RFC3339) + "&to=" + today.AddDate(0, 0, 2).Format(time.RFC3339) + "&interval=day",
			series: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := a.stats(t, "summary", "summary", tc.query)
			got := s["stats"].(map[string]any)
			users := 0.0
			if tc.messages > 0 {
				users = 1
			}
			want := map[string]float64{"messages": tc.messages, "user_messages": tc.messages / 2, "agent_messages": tc.messages / 2,
				"chats": tc.chats, "users": users, "tokens": tc.tokens, "credits_used": tc.credits}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s %v, want %v", k, got[k], v)
				}
			}
			if series, _ := s["series"].([]any); len(series) != tc.series {
				t.Errorf("%d buckets, want %d", len(series), tc.series)
			}
		})
	}
}

// A window or interval the statistics cannot read is 422 naming the field.
func TestStatsRefuseBadWindows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, map[string]any{})
	for _, tc := range []struct{ query, field string }{
		{"&from=yesterday", "from"},
		{"&to=2026-13-01T00:00:00Z", "to"},
		{"&from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", "from"},
		{"&interval=month", "interval"},
		{"&from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&interval=hour", "interval"},
	} {
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/stats/summary?" + a.query(tc.query), Key: b.key})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		details := res.JSON(t)["error"].(map[string]any)["details"].([]any)
		if field := details[0].(map[string]any)["field"]; field != tc.field {
			t.Errorf("%s: field %v, want %s", tc.query, field, tc.field)
		}
	}
}

// Votes, performance, reasoning and the dashboard count the answers as their records say (the
// model takes 20 ms before it answers, so that each answer records its reply time).
func TestStatsOfAnswers(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{FirstByteDelay: 20 * time.Millisecond})
	b := setup(t, withProvider(fake.URL))
	b.startWorker(t, workerOptions{})
	a := b.chatBot(t, map[string]any{})
	_, _, answers := statsHistory(t, a)
	for _, v := range []struct{ message, voter, vote string }{{"0", "u1", "down"}, {"0", "u2", "down"}, {"1", "u1", "up"}} {
		i, _ := strconv.Atoi(v.message)
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/chat/message/vote", Key: b.key,
			Body: a.body(map[string]any{"message_id": answers[i]["uuid"], "voter_id": v.voter, "vote_type": v.vote})})
		expect(t, res, http.StatusOK, "")
	}
	replies, slowest := 0.0, 0.0
	for _, m := range answers {
		if ms, _ := strconv.ParseFloat(m["estimated_time_ms"].(string), 64); ms > 0 {
			replies, slowest = replies+1, max(slowest, ms)
		}
	}
	votes := a.statsOnce(t, "votes", "votes", "", func(s map[string]any) bool { return s["downvotes"] == 2.0 && s["upvotes"] == 1.0 })["stats"].(map[string]any)
	worst, _ := votes["worst_rated"].([]any)
	if votes["upvotes"] != 1.0 || votes["downvotes"] != 2.0 || votes["rated_messages"] != 2.0 || votes["satisfaction"] != 0.333333 ||
		len(worst) != 1 || worst[0].(map[string]any)["message_id"] != answers[0]["uuid"] || worst[0].(map[string]any)["downvotes"] != 2.0 {
		t.Fatalf("votes %v", votes)
	}
	perf := a.statsOnce(t, "performance", "performance", "", func(s map[string]any) bool {
		return s["reply_ms"].(map[string]any)["count"] == 3.0
	})["stats"].(map[string]any)
	reply, first := perf["reply_ms"].(map[string]any), perf["first_token_ms"].(map[string]any)
	if replies != 3 || reply["count"] != replies || reply["max"] != slowest {
		t.Fatalf("reply times %v, want %v answers, the slowest %v ms", reply, replies, slowest)
	}
	if first["count"] != 0.0 {
		t.Fatalf("times to the first token of answers that were not streamed: %v", first)
	}
	modes := a.stats(t, "reasoning-summary", "reasoning", "")["stats"].(map[string]any)["modes"].(map[string]any)
	if len(modes) != 1 || modes["standard"] != 3.0 {
		t.Fatalf("modes %v", modes)
	}
	d := a.stats(t, "dashboard", "dashboard", "&interval=day")
	if st := d["stats"].(map[string]any); st["summary"].(map[string]any)["messages"] != 6.0 || st["votes"].(map[string]any)["downvotes"] != 2.0 ||
		st["performance"].(map[string]any)["reply_ms"].(map[string]any)["count"] != replies {
		t.Fatalf("dashboard %v", st)
	}
	if series := d["series"].([]any); len(series) != 31 {
		t.Fatalf("%d daily buckets in the last 30 days, want 31", len(series))
	}
	for call, name := range map[string]string{"tools": "tools", "workflows": "workflows", "errors": "errors"} {
		got := a.stats(t, call, name, "")["stats"].(map[string]any)
		if n := got[map[string]string{"tools": "calls", "workflows": "runs", "errors": "errors"}[call]]; n != 0.0 {
			t.Fatalf("%s of an agent whose answers made none: %v", call, got)
		}
	}
}

// Agent runs count in reasoning-summary (by status, with their cycles) and a failed one in the
// errors, by the code its answer carried.
func TestStatsOfAgentRuns(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("list_deals", `{}`), {Reply: "No deals yet."}}})
	_, chat := a.chat(t, map[string]any{"message": "Any deals?", "reasoning_mode": "agent"})
	if chat == nil {
		t.Fatal("no answer")
	}
	cyclesRun := chat["totalCycles"].(float64)
	fake.Set(providertest.Behavior{Status: http.StatusBadRequest, ErrorMessage: "model overloaded with nonsense"})
	res, _ := a.chat(t, map[string]any{"message": "Any deals now?", "reasoning_mode": "agent"})
	if res.Status == http.StatusOK {
		t.Fatalf("a run whose model refuses answered %s", res.Body)
	}
	code := res.JSON(t)["error"].(map[string]any)["code"]
	runs := a.stats(t, "reasoning-summary", "reasoning", "")["stats"].(map[string]any)["agent_runs"].(map[string]any)
	byStatus, perRun := runs["by_status"].(map[string]any), runs["cycles_per_run"].(map[string]any)
	if runs["runs"] != 2.0 || byStatus["succeeded"] != 1.0 || byStatus["failed"] != 1.0 || perRun["count"] != 2.0 || perRun["max"] != cyclesRun {
		t.Fatalf("agent runs %v, want 2 (one of %v cycles)", runs, cyclesRun)
	}
	errs := a.stats(t, "errors", "errors", "")["stats"].(map[string]any)
	byCode := errs["by_code"].([]any)
	if errs["errors"] != 1.0 || len(byCode) != 1 || byCode[0].(map[string]any)["source"] != "agent_run" || byCode[0].(map[string]any)["code"] != code {
		t.Fatalf("errors %v, want the run's %v", errs, code)
	}
}

// A streamed answer records its time to the first token, from the user's message: at least the
// model's wait before its first byte, at most what the client waited for the first delta.
func TestStatsTimeToFirstToken(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	b.startWorker(t, workerOptions{})
	a := b.chatBot(t, map[string]any{"provider_key": "k"})
	fake.Set(providertest.Behavior{Reply: "One two three four five", FirstByteDelay: 40 * time.Millisecond, ChunkDelay: 30 * time.Millisecond})
	sent := time.Now()
	res := a.streamChat(t, context.Background(), map[string]any{"message": "count", "stream": true})
	defer func() { _ = res.Body.Close() }()
	var waited time.Duration
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "delta" && waited == 0 {
			waited = time.Since(sent)
		}
	}
	if waited == 0 {
		t.Fatal("the stream sent no delta")
	}
	perf := a.statsOnce(t, "performance", "performance", "", func(s map[string]any) bool {
		return s["first_token_ms"].(map[string]any)["count"] == 1.0
	})["stats"].(map[string]any)
	first := perf["first_token_ms"].(map[string]any)["p50"].(float64)
	if first < 40 || first > float64(waited.Milliseconds()) {
		t.Fatalf("time to first token %v ms: want at least 40 and at most the %v the client waited for the first delta", first, waited)
	}
}
