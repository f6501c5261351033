package store_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

// An event left in its document keeps the trace context of its change, so that the relay
// publishes it in the change's trace.
func TestOutboxKeepsTheTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	at := time.Now().UTC().Truncate(time.Millisecond)
	c := chats.Chat{UUID: "c1", ProjectID: "p", BotID: "b", CreatedAt: at, UpdatedAt: at}
	m := chats.Message{UUID: "m1", ChatID: c.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at}
	ev := outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", map[string]string{"chat_id": c.UUID})
	ev.Trace = map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if _, err := store.NewChats(db).Start(ctx, &c, &m, ev); err != nil {
		t.Fatal(err)
	}
	pending, err := store.NewOutbox(db).Pending(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || !maps.Equal(pending[0].Event.Trace, ev.Trace) {
		t.Fatalf("pending events %+v, want one with trace %v", pending, ev.Trace)
	}
}
