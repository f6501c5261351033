package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

// A chat started with its first message reads like one created and then appended to: counted,
// with the message in its first page carrying the event, and the next message numbered 2.
func TestChatStartCountsTheFirstMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	at := time.Now().UTC().Truncate(time.Millisecond)
	c := chats.Chat{UUID: "c1", ProjectID: "p", BotID: "b", Title: "hi", CreatedAt: at.Add(-time.Second), UpdatedAt: at.Add(-time.Second)}
	first := chats.Message{UUID: "m1", ChatID: c.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at}
	ev := outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", map[string]string{"chat_id": c.UUID})
	ref, err := repo.Start(ctx, c, &first, ev)
	if err != nil {
		t.Fatal(err)
	}
	if first.Seq != 1 || ref != (outbox.Ref{Resource: chats.Resource, ID: "c1:0"}) {
		t.Fatalf("first message seq %d in %v", first.Seq, ref)
	}
	got, err := repo.Get(ctx, "p", "b", c.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Messages != 1 || !got.UpdatedAt.Equal(at) || got.Title != "hi" {
		t.Fatalf("stored chat %+v", got)
	}
	pending, err := store.NewOutbox(db).Pending(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Ref != ref || pending[0].Event.ID != ev.ID {
		t.Fatalf("pending events %+v", pending)
	}
	second := chats.Message{UUID: "m2", ChatID: c.UUID, Role: chats.RoleAgent, Content: "hello", CreatedAt: at, UpdatedAt: at}
	if _, err := repo.Append(ctx, got, &second, outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", map[string]string{"chat_id": c.UUID})); err != nil {
		t.Fatal(err)
	}
	msgs, err := repo.Range(ctx, c.UUID, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].UUID != "m1" || msgs[0].Seq != 1 || msgs[1].UUID != "m2" || msgs[1].Seq != 2 {
		t.Fatalf("messages %+v", msgs)
	}
}
