package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/stats"
)

// statsMonday is the first day of the seeded history, a Monday.
var statsMonday = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// seedStatsHistory stores an agent's history: chat A (the account's, 40 messages a minute apart
// from statsMonday, so that its first ones moved to a page, which also holds a second copy of
// message 1 and a stray copy of message 35, still among the recent ones), chat B (end user sub1,
// 2 messages a day later), chat C (end user sub2, 2 messages 8 days later), a deleted chat and a
// chat of another agent.
func seedStatsHistory(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	repo := store.NewChats(db)
	say := func(chatID, bot, subscriber string, at time.Time, turns int, userTokens, agentTokens int, credit, cost string) chats.Chat {
		c := chats.Chat{UUID: chatID, ProjectID: "p", BotID: bot, Subscriber: subscriber, CreatedAt: at, UpdatedAt: at}
		for i := range turns * 2 {
			m := chats.Message{UUID: fmt.Sprintf("%s-%d", chatID, i+1), ChatID: chatID, Role: chats.RoleUser, Tokens: userTokens,
				CreditUsed: "0", EstimatedCost: "0.000000", User: chats.User{UUID: "acc1"}, CreatedAt: at.Add(time.Duration(i) * time.Minute)}
			if i%2 == 1 {
				m.Role, m.Tokens, m.CreditUsed, m.EstimatedCost, m.User = chats.RoleAgent, agentTokens, credit, cost, chats.User{UUID: "bot"}
			}
			write := repo.Append
			if i == 0 {
				write = repo.Start
			}
			if _, err := write(ctx, &c, &m, outbox.New(ctx, outbox.ChatMessageCreated, "p", bot, nil)); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	a := say("A", "b", "", statsMonday, 20, 2, 10, "0.5", "0.000100")
	say("B", "b", "sub1", statsMonday.Add(24*time.Hour), 1, 3, 7, "1", "0.002000")
	say("C", "b", "sub2", statsMonday.Add(8*24*time.Hour), 1, 4, 6, "2", "0.000500")
	gone := say("D", "b", "", statsMonday, 1, 100, 100, "9", "9")
	say("E", "other", "", statsMonday, 1, 100, 100, "9", "9")
	if err := repo.Delete(ctx, gone, statsMonday.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if a.RecentFrom <= 1 || a.RecentFrom > 35 {
		t.Fatalf("chat A's recent messages start at %d: none moved to a page", a.RecentFrom)
	}
	msgs, err := repo.Range(ctx, a, 1, 35)
	if err != nil {
		t.Fatal(err)
	}
	copies := bson.A{msgs[0], msgs[34]}
	if _, err := db.Collection("chat_messages").UpdateOne(ctx, bson.D{{Key: "_id", Value: "A:0"}},
		bson.D{{Key: "$push", Value: bson.D{{Key: "messages", Value: bson.D{{Key: "$each", Value: copies}}}}}}); err != nil {
		t.Fatal(err)
	}
}

// The summary counts each stored message of the agent in the window once, wherever it is kept.
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
		{name: "first 20 minutes", from: at(0), to: at(20 * time.Minute),
			want: stats.Totals{Chats: 1, Messages: 20, UserMessages: 10, AgentMessages: 10, Users: 1, CreditsUsed: 5, Tokens: 120, EstimatedCost: 0.001}},
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
			if r.Stats != tc.want {
				t.Fatalf("summary %+v, want %+v", r.Stats, tc.want)
			}
			if len(r.Series) != len(tc.series) {
				t.Fatalf("%d buckets, want %d", len(r.Series), len(tc.series))
			}
			for i, b := range r.Series {
				if b.Stats != tc.series[i] || !b.Start.Equal(w.From.AddDate(0, 0, i*map[string]int{"day": 1, "week": 7}[tc.interval])) {
					t.Fatalf("bucket %d %v %+v, want %+v", i, b.Start, b.Stats, tc.series[i])
				}
			}
		})
	}
}
