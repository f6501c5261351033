package events_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/stats"
)

// The statistics recorder follows the stream from where the last one stopped: it counts each
// message once, whoever records it, reads a message its event left out from the store, keeps
// nothing of agents that do not exist, and one recorder at a time holds the claim.
func TestRecorderFollowsTheStream(t *testing.T) {
	pub, project := setup(t)
	nc, db := testenv.NATS(t), testenv.Mongo(t)
	ctx := context.Background()
	if err := store.NewAgents(db).Insert(ctx, agents.Bot{ID: "b", UUID: "b-uuid", ProjectID: project}, outbox.New(ctx, outbox.BotCreated, project, "b", nil)); err != nil {
		t.Fatal(err)
	}
	ledger, since := store.NewStats(db), time.Now()
	svc := stats.NewService(ledger)
	start := func(owner string) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		r := stats.NewRecorder(ledger, store.NewAgents(db), store.NewChats(db), events.Tail(nc, events.SubjectPrefix+"*.chat.message.>", quiet),
			owner, since, quiet)
		go func() {
			defer close(done)
			r.Run(ctx)
		}()
		return func() {
			cancel()
			<-done
		}
	}
	now := time.Now().UTC()
	say := func(bot, id, role, content string, tokens int) outbox.Event {
		t.Helper()
		m := chats.Message{UUID: id, ChatID: "c-" + id, Role: role, Content: content, Tokens: tokens, User: chats.User{UUID: "u1"}, CreatedAt: now}
		ev := outbox.New(ctx, outbox.ChatMessageCreated, project, bot, chats.EventOf(m))
		if err := pub.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	counted := func(messages, tokens int) {
		t.Helper()
		w, err := stats.ParseWindow("", "", "", time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			r, err := svc.Summary(ctx, project, "b", w)
			if err != nil {
				t.Fatal(err)
			}
			if r.Stats.Messages == messages && r.Stats.Tokens == tokens {
				return
			}
			if r.Stats.Messages > messages || time.Now().After(deadline) {
				t.Fatalf("%d messages of %d tokens counted, want %d of %d", r.Stats.Messages, r.Stats.Tokens, messages, tokens)
			}
		}
	}

	stopOne := start("one")
	say("b", "m1", chats.RoleUser, "hello", 1)
	say("b", "m2", chats.RoleAgent, "hi", 2)
	counted(2, 3)
	if _, held, err := ledger.Claim(ctx, "intruder", time.Now().Add(time.Minute)); err != nil || held {
		t.Fatalf("a second recorder took the claim while the first held it (%v)", err)
	}
	stopOne()

	// Published while no recorder runs: counted by the next, which takes the claim the first
	// gave up at once, and counts what the first counted not again.
	say("nobody", "m3", chats.RoleUser, "who is there?", 50)
	large := chats.Message{UUID: "m4", ChatID: "c4", Role: chats.RoleUser, Content: strings.Repeat("long ", outbox.MaxData/4), Tokens: 7,
		User: chats.User{UUID: "u2"}, CreatedAt: now}
	ev := outbox.New(ctx, outbox.ChatMessageCreated, project, "b", chats.EventOf(large))
	if len(ev.Omitted) != 1 || ev.Omitted[0] != "message" {
		t.Fatalf("the large message's event omits %v", ev.Omitted)
	}
	chat := chats.Chat{UUID: "c4", ProjectID: project, BotID: "b", CreatedAt: now, UpdatedAt: now}
	if _, err := store.NewChats(db).Start(ctx, &chat, &large, ev); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	say("b", "m5", chats.RoleAgent, "bye", 4)
	stopTwo := start("two")
	defer stopTwo()
	counted(4, 14)
	var hours int
	w, _ := stats.ParseWindow("", "", "", time.Now().Add(time.Hour))
	if err := ledger.Hours(ctx, project, "nobody", w.From, w.To, func(stats.Hourly) error { hours++; return nil }); err != nil || hours != 0 {
		t.Fatalf("%d hours kept of an agent that does not exist (%v)", hours, err)
	}
}

// Events that come a few at a time, each after a pause longer than Tail waits for a next one
// once it has a window's worth, reach the recorder in one batch when they come within that
// window of the first: a chat's question and answer are folded into their pages with one write.
func TestTailBatchesEventsOfAWindow(t *testing.T) {
	pub, project := setup(t)
	nc := testenv.NATS(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	since := time.Now()
	const sent = 5
	batches := make(chan int, sent)
	done := make(chan error, 1)
	go func() {
		done <- events.Tail(nc, events.SubjectPrefix+project+".chat.message.>", quiet)(ctx, 0, since, func(_ context.Context, batch []stats.Delivery) error {
			batches <- len(batch)
			return nil
		})
	}()
	for i := range sent {
		m := chats.Message{UUID: fmt.Sprintf("m%d", i), ChatID: "c", Role: chats.RoleUser, Content: "hello", CreatedAt: time.Now()}
		if err := pub.Publish(ctx, outbox.New(ctx, outbox.ChatMessageCreated, project, "b", chats.EventOf(m))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	var sizes []int
	for got := 0; got < sent; {
		select {
		case n := <-batches:
			sizes = append(sizes, n)
			got += n
		case err := <-done:
			t.Fatalf("the tail ended: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("batches %v, want %d events", sizes, sent)
		}
	}
	if len(sizes) > 2 {
		t.Fatalf("%d events 40 ms apart came in batches of %v, want one (two at most, on a machine that paused)", sent, sizes)
	}
}
