package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
)

// turnMessages are a standard turn's two messages as chats.Service makes them, and messages whose
// fields hold what few messages hold.
func turnMessages(at time.Time) []chats.Message {
	pref := chats.Preference{ReasoningType: "standard", Model: "gpt-4o-mini", MaxTokens: 1024, Complexity: "simple"}
	user := chats.Message{UUID: "m1", ChatID: "c1", Role: chats.RoleUser, Content: "What is the return policy?", Model: "gpt-4o-mini",
		Complexity: "simple", ReasoningType: "standard", EstimatedTimeMS: "0", EstimatedCost: "0.000000", Channel: "api", CreditUsed: "0",
		Tokens: 6, Reasoning: freeform.Object{}, Preference: pref, Sources: []memory.Ref{}, User: chats.User{UUID: "dev"},
		CreatedAt: at, UpdatedAt: at}
	agent := user
	agent.UUID, agent.Role, agent.Content, agent.Model = "m2", chats.RoleAgent, "Orders ship abroad within five days. [1]", "offline-extractive"
	agent.Confidence, agent.ConfidenceScore, agent.CreditUsed, agent.Tokens, agent.Version = "high", "0.9", "1", 10, 3
	agent.Preference.Model = "offline-extractive"
	agent.Sources = []memory.Ref{{CitationNumber: 1, SourceID: "s1", Title: "Load note", Type: "text", Tags: []string{}}}
	agent.User = chats.User{UUID: "bot", Name: "Load", Avatar: "a.png", AvatarLink: "https://example.com/a"}
	odd := chats.Message{UUID: "m3", ChatID: "c1", Role: chats.RoleAgent, Content: "", EstimatedTimeMS: "", EstimatedCost: "",
		Channel: "", CreditUsed: "", Confidence: "low", Upvotes: 2, Downvotes: 1, Interrupted: true, IsToolExecuting: true,
		Reasoning:  freeform.Object{"steps": []any{"look", "answer"}},
		Preference: chats.Preference{ReasoningType: "agent", Model: "", MaxTokens: 0, Complexity: "hard"},
		Sources:    []memory.Ref{}, CreatedAt: at, UpdatedAt: at.Add(time.Minute), FirstTokenMS: 420}
	widget := user
	widget.UUID, widget.Channel, widget.EstimatedTimeMS, widget.EstimatedCost = "m4", "widget", "1250", "0.000420"
	widget.Preference = chats.Preference{ReasoningType: "standard", Model: "gpt-4o", MaxTokens: 256, Complexity: "complex"}
	return []chats.Message{user, agent, odd, widget}
}

// A chat's messages are stored without the fields every reader can tell (zero values, the values
// nearly every message holds, the preference's repeats of the message's own fields) and read back
// exactly as they were written, from the chat's document and from its pages.
func TestMessagesStoredCompactlyReadBackExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	at := time.Now().UTC().Truncate(time.Millisecond)
	want := turnMessages(at)
	// Enough messages that the first ones move to a page.
	for i := len(want); i < chats.HistoryTurns+12; i++ {
		m := want[i%4]
		m.UUID = fmt.Sprintf("m%d", i+1)
		want = append(want, m)
	}
	c := chats.Chat{UUID: "c1", ProjectID: "p", BotID: "b", CreatedAt: at, UpdatedAt: at}
	evs := make([]outbox.Event, len(want))
	for i := range evs {
		evs[i] = outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", map[string]string{"chat_id": c.UUID})
	}
	ms := slices.Clone(want)
	if _, err := repo.StartWith(ctx, &c, ms, evs); err != nil {
		t.Fatal(err)
	}
	stored, err := repo.Get(ctx, "p", "b", c.UUID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := repo.Range(ctx, stored, 1, stored.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if stored.RecentFrom <= 1 || len(got) != len(want) {
		t.Fatalf("read %d messages (recent from %d), want %d with some in pages", len(got), stored.RecentFrom, len(want))
	}
	for i := range want {
		want[i].Seq = i + 1
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("message %d read back as\n%+v\nwant\n%+v", i+1, got[i], want[i])
		}
	}

	var raw bson.Raw
	if err := db.Collection("chats").FindOne(ctx, bson.D{{Key: "_id", Value: c.UUID}}).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	recent, err := raw.LookupErr("recent")
	if err != nil {
		t.Fatal(err)
	}
	// The first recent message made like want[0], a standard turn's user message.
	first, err := recent.Array().IndexErr(uint((4 - (stored.RecentFrom-1)%4) % 4))
	if err != nil {
		t.Fatal(err)
	}
	keys := fieldsOf(t, first.Document())
	if wantKeys := []string{"uuid", "chat_id", "seq", "role", "content", "model", "tokens", "user", "created_at"}; !slices.Equal(keys, wantKeys) {
		t.Fatalf("a standard turn's user message stored as %v, want %v", keys, wantKeys)
	}
	// The next, made like want[1], the answer, cites a source of no URL, favicon or tags.
	answer, err := recent.Array().IndexErr(uint((5 - (stored.RecentFrom-1)%4) % 4))
	if err != nil {
		t.Fatal(err)
	}
	cited := answer.Document().Lookup("sources").Array().Index(0).Document()
	if keys := fieldsOf(t, cited); !slices.Equal(keys, []string{"citationnumber", "sourceid", "title", "type"}) {
		t.Fatalf("the answer's source stored as %v", keys)
	}
}

func fieldsOf(t *testing.T, doc bson.Raw) []string {
	t.Helper()
	els, err := doc.Elements()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, el := range els {
		keys = append(keys, el.Key())
	}
	return keys
}

// Messages stored whole, as every message was before, read as they were written.
func TestMessagesStoredWholeReadAsBefore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	at := time.Now().UTC().Truncate(time.Millisecond)
	want := turnMessages(at)
	for i := range want {
		want[i].Seq = i + 1
	}
	// bson.Marshal uses the driver's default registry: every field, as the store wrote them before.
	doc, err := bson.Marshal(chats.Chat{UUID: "c1", ProjectID: "p", BotID: "b", Messages: len(want), CreatedAt: at, UpdatedAt: at,
		Recent: want, RecentFrom: 1, Rev: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(fieldsOf(t, bson.Raw(doc).Lookup("recent").Array().Index(0).Document())); n < 25 {
		t.Fatalf("the whole message has %d fields", n)
	}
	if _, err := db.Collection("chats").InsertOne(ctx, bson.Raw(doc)); err != nil {
		t.Fatal(err)
	}
	got, err := store.NewChats(db).Get(ctx, "p", "b", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Recent, want) {
		t.Fatalf("read\n%+v\nwant\n%+v", got.Recent, want)
	}
}

// A message stored in another document than its chat's, an agent run's question and answer,
// reads back exactly too, its chat's id with it.
func TestMessagesOfARunReadBackExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	at := time.Now().UTC().Truncate(time.Millisecond)
	ms := turnMessages(at)
	e := agentruns.Execution{ID: "e1", ProjectID: "p", BotID: "b", ChatID: "c1", User: ms[0], Answer: &ms[1], Status: "done",
		Cycles: []agentruns.Cycle{}, Log: []agentruns.Entry{}}
	runs := store.NewExecutions(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := runs.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := runs.Get(ctx, "p", "b", "e1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.User, ms[0]) || got.Answer == nil || !reflect.DeepEqual(*got.Answer, ms[1]) {
		t.Fatalf("the run's messages read back as\n%+v\n%+v\nwant\n%+v\n%+v", got.User, got.Answer, ms[0], ms[1])
	}
}
