package outbox_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/eventstest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// heldEnv is a dispatcher publishing to the test NATS server's stream, on a database of its own,
// and a chat stored there whose first message carries an event.
type heldEnv struct {
	d     *outbox.Dispatcher
	repo  store.Chats
	box   store.Outbox
	js    jetstream.JetStream
	chat  chats.Chat
	ref   outbox.Ref
	first outbox.Event
}

func newHeldEnv(t *testing.T) *heldEnv {
	t.Helper()
	ctx := context.Background()
	pub, js := eventstest.Stream(t)
	db := testenv.Mongo(t)
	e := &heldEnv{repo: store.NewChats(db), box: store.NewOutbox(db), js: js}
	e.d = outbox.NewDispatcher(pub, e.box, slog.New(slog.NewTextHandler(io.Discard, nil)), func(string) {})
	at := time.Now().UTC().Truncate(time.Millisecond)
	project := testenv.NewName()
	e.chat = chats.Chat{UUID: testenv.NewName(), ProjectID: project, BotID: "b", CreatedAt: at, UpdatedAt: at}
	m := chats.Message{UUID: testenv.NewName(), ChatID: e.chat.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at}
	e.first = outbox.New(ctx, outbox.ChatMessageCreated, project, "b", map[string]string{"said": "hi"})
	var err error
	if e.ref, err = e.repo.Start(ctx, &e.chat, &m, e.first); err != nil {
		t.Fatal(err)
	}
	return e
}

// inDocument lists the ids of the events still in the chat's document.
func (e *heldEnv) inDocument(t *testing.T) []string {
	t.Helper()
	pending, err := e.box.Pending(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range pending {
		if p.Ref == e.ref {
			ids = append(ids, p.Event.ID)
		}
	}
	return ids
}

// published reports whether the stream holds the event ev.
func (e *heldEnv) published(t *testing.T, ev outbox.Event) bool {
	t.Helper()
	s, err := e.js.Stream(context.Background(), events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(context.Background(), events.Subject(ev))
	return err == nil && msg.Header.Get(jetstream.MsgIDHeader) == ev.ID
}

// reply appends the agent's reply to the chat, removing the events taken, and returns its event.
func (e *heldEnv) reply(t *testing.T, taken []outbox.Pending) outbox.Event {
	t.Helper()
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	m := chats.Message{UUID: testenv.NewName(), ChatID: e.chat.UUID, Role: chats.RoleAgent, Content: "hello", CreatedAt: at, UpdatedAt: at}
	ev := outbox.New(ctx, outbox.ChatMessageCreated, e.chat.ProjectID, "b", map[string]string{"said": "hello"})
	var ids []string
	for _, p := range taken {
		ids = append(ids, p.Event.ID)
	}
	if _, err := e.repo.Append(ctx, &e.chat, &m, ev, ids); err != nil {
		t.Fatal(err)
	}
	return ev
}

// An event dispatched held is published at once and stays in its document until the document's
// next write takes it and removes it with its own change; what is still held when the process
// leaves is removed then.
func TestHeldEventGoesWithItsDocumentsNextWrite(t *testing.T) {
	t.Parallel()
	e := newHeldEnv(t)
	ctx := context.Background()
	e.d.DispatchHeld(ctx, e.ref, e.first)
	if !e.published(t, e.first) {
		t.Fatal("the held event was not published")
	}
	if got := e.inDocument(t); !slices.Equal(got, []string{e.first.ID}) {
		t.Fatalf("events in the chat %v, want the held one", got)
	}
	taken := e.d.Take(e.ref)
	if len(taken) != 1 || taken[0].Event.ID != e.first.ID {
		t.Fatalf("taken %+v", taken)
	}
	if again := e.d.Take(e.ref); len(again) != 0 {
		t.Fatalf("taken twice: %+v", again)
	}
	second := e.reply(t, taken)
	if got := e.inDocument(t); !slices.Equal(got, []string{second.ID}) {
		t.Fatalf("events in the chat after the reply %v, want only the reply's", got)
	}
	e.d.DispatchHeld(ctx, e.ref, second)
	if err := e.d.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.inDocument(t); len(got) != 0 {
		t.Fatalf("events left in the chat after the process left: %v", got)
	}
}

// A held event that no write takes is removed once its time is up, as any published event is.
func TestHeldEventNotTakenIsRemoved(t *testing.T) {
	t.Parallel()
	e := newHeldEnv(t)
	outbox.SetHoldFor(e.d, 50*time.Millisecond)
	e.d.DispatchHeld(context.Background(), e.ref, e.first)
	for deadline := time.Now().Add(30 * time.Second); len(e.inDocument(t)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the held event is still in the chat: %v", e.inDocument(t))
		}
	}
	if taken := e.d.Take(e.ref); len(taken) != 0 {
		t.Fatalf("the removed event is still held: %+v", taken)
	}
}

// A write that fails hands the events it took back, and they are removed as any published
// event is.
func TestHeldEventsOfAFailedWriteAreReleased(t *testing.T) {
	t.Parallel()
	e := newHeldEnv(t)
	ctx := context.Background()
	e.d.DispatchHeld(ctx, e.ref, e.first)
	e.d.Release(e.d.Take(e.ref))
	if err := e.d.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.inDocument(t); len(got) != 0 {
		t.Fatalf("events left in the chat: %v", got)
	}
}
