package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

// A chat started with its first message reads like one created and then appended to: counted,
// with the message in the chat's own document carrying the event, and the next message numbered 2.
func TestChatStartCountsTheFirstMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	at := time.Now().UTC().Truncate(time.Millisecond)
	c := chats.Chat{UUID: "c1", ProjectID: "p", BotID: "b", Title: "hi", CreatedAt: at.Add(-time.Second), UpdatedAt: at.Add(-time.Second)}
	first := chats.Message{UUID: "m1", ChatID: c.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at}
	ev := outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", map[string]string{"chat_id": c.UUID})
	ref, err := repo.Start(ctx, &c, &first, ev)
	if err != nil {
		t.Fatal(err)
	}
	if first.Seq != 1 || ref != (outbox.Ref{Resource: chats.RecordResource, ID: "c1"}) {
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
	reply := outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", map[string]string{"chat_id": c.UUID})
	if _, err := repo.Append(ctx, &got, &second, reply, []string{ev.ID}); err != nil {
		t.Fatal(err)
	}
	// The first message's event, published, goes with the write that adds the second's.
	if pending, err = store.NewOutbox(db).Pending(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Ref != ref || pending[0].Event.ID != reply.ID {
		t.Fatalf("pending events after the reply %+v", pending)
	}
	again, err := repo.Get(ctx, "p", "b", c.UUID)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := repo.Range(ctx, again, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].UUID != "m1" || msgs[0].Seq != 1 || msgs[1].UUID != "m2" || msgs[1].Seq != 2 {
		t.Fatalf("messages %+v", msgs)
	}
}

// started stores a new chat id of agent b in project p with its first message, "first".
func started(t *testing.T, repo store.Chats, id string) chats.Chat {
	t.Helper()
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	c := chats.Chat{UUID: id, ProjectID: "p", BotID: "b", CreatedAt: at, UpdatedAt: at}
	first := chats.Message{UUID: "first", ChatID: c.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at}
	if _, err := repo.Start(ctx, &c, &first, outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", nil)); err != nil {
		t.Fatal(err)
	}
	return c
}

// chatWith appends n messages ("<prefix><seq>") to c through repo.
func chatWith(t *testing.T, repo store.Chats, c *chats.Chat, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		at := time.Now().UTC().Truncate(time.Millisecond)
		m := chats.Message{UUID: fmt.Sprintf("%s%d", prefix, c.Messages+1), ChatID: c.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at}
		if _, err := repo.Append(ctx, c, &m, outbox.New(ctx, outbox.ChatMessageCreated, c.ProjectID, c.BotID, nil), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// wholeChat reads the chat id again and all its messages, checking they are numbered 1..n in
// order.
func wholeChat(t *testing.T, repo store.Chats, id string) (chats.Chat, []chats.Message) {
	t.Helper()
	c, err := repo.Get(context.Background(), "p", "b", id)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := repo.Range(context.Background(), c, 1, c.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != c.Messages {
		t.Fatalf("%d messages of %d", len(msgs), c.Messages)
	}
	for i, m := range msgs {
		if m.Seq != i+1 {
			t.Fatalf("message %d has seq %d", i+1, m.Seq)
		}
	}
	return c, msgs
}

// A long chat keeps its recent messages in its own document, bounded (a prompt's history and ten
// more) and always holding a prompt's history, and moves older ones to pages; every message stays
// readable, findable, votable and deletable wherever it is.
func TestLongChatsMoveOldMessagesToPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	c := started(t, repo, "long")
	for n := 2; n <= 230; n++ {
		chatWith(t, repo, &c, "m", 1)
		if len(c.Recent) > chats.HistoryTurns+10 || len(c.Recent) < min(n, chats.HistoryTurns) {
			t.Fatalf("after %d messages the chat holds %d recent ones", n, len(c.Recent))
		}
	}
	stored, msgs := wholeChat(t, repo, c.UUID)
	if stored.Messages != 230 || stored.RecentFrom != 210 || len(stored.Recent) != 21 {
		t.Fatalf("chat of %d messages holds %d from %d", stored.Messages, len(stored.Recent), stored.RecentFrom)
	}
	if msgs[0].UUID != "first" || msgs[229].UUID != "m230" {
		t.Fatalf("first %s, last %s", msgs[0].UUID, msgs[229].UUID)
	}
	if pages, _ := db.Collection("chat_messages").CountDocuments(ctx, bson.D{{Key: "chat_id", Value: c.UUID}}); pages != 5 {
		t.Fatalf("%d pages, want 5", pages)
	}
	for _, id := range []string{"m7", "m220"} {
		m, err := repo.Message(ctx, "p", "b", id)
		if err != nil || m.UUID != id {
			t.Fatalf("message %s: %+v %v", id, m, err)
		}
		if _, err := repo.Message(ctx, "p", "other", id); err == nil {
			t.Fatalf("message %s found through another agent", id)
		}
		m.Upvotes = 3
		if _, err := repo.UpdateMessage(ctx, m, outbox.New(ctx, outbox.ChatMessageUpdated, "p", "b", nil)); err != nil {
			t.Fatal(err)
		}
		if again, err := repo.Message(ctx, "p", "b", id); err != nil || again.Upvotes != 3 {
			t.Fatalf("voted message %s: %+v %v", id, again, err)
		}
		if _, err := repo.DeleteMessage(ctx, m, outbox.New(ctx, outbox.ChatMessageDeleted, "p", "b", nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Message(ctx, "p", "b", id); err == nil {
			t.Fatalf("deleted message %s still found", id)
		}
	}
	// A message deleted from the recent ones does not disturb where later ones go.
	chatWith(t, repo, &c, "m", 70)
	c, err := repo.Get(ctx, "p", "b", c.UUID)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err = repo.Range(ctx, c, 1, c.Messages)
	if err != nil || len(msgs) != 298 || msgs[297].UUID != "m300" {
		t.Fatalf("%d messages after the deletions (%v)", len(msgs), err)
	}
}

// A chat started with many messages (the OpenAI door's earlier messages) stores them in two
// writes and reads like one appended to message by message: counted, its last messages in its
// own document and the older in their pages, each message's event in the document that holds
// it, and later messages numbered on and moved to the same pages.
func TestChatStartedWithManyMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	at := time.Now().UTC().Truncate(time.Millisecond)
	c := chats.Chat{UUID: "many", ProjectID: "p", BotID: "b", CreatedAt: at, UpdatedAt: at}
	var ms []chats.Message
	var evs []outbox.Event
	for i := 1; i <= 201; i++ {
		ms = append(ms, chats.Message{UUID: fmt.Sprintf("m%d", i), ChatID: c.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at})
		evs = append(evs, outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", map[string]int{"n": i}))
	}
	refs, err := repo.StartWith(ctx, &c, ms, evs)
	if err != nil {
		t.Fatal(err)
	}
	if ms[200].Seq != 201 || refs[0] != (outbox.Ref{Resource: chats.Resource, ID: "many:0"}) || refs[180] != (outbox.Ref{Resource: chats.Resource, ID: "many:3"}) ||
		refs[181] != (outbox.Ref{Resource: chats.RecordResource, ID: "many"}) || refs[200] != refs[181] {
		t.Fatalf("last seq %d, events in %v, %v, %v, %v", ms[200].Seq, refs[0], refs[180], refs[181], refs[200])
	}
	stored, msgs := wholeChat(t, repo, c.UUID)
	if stored.Messages != 201 || stored.RecentFrom != 182 || len(stored.Recent) != chats.HistoryTurns || msgs[0].UUID != "m1" || msgs[200].UUID != "m201" {
		t.Fatalf("chat of %d messages holds %d from %d; first %s, last %s", stored.Messages, len(stored.Recent), stored.RecentFrom, msgs[0].UUID, msgs[200].UUID)
	}
	if pages, _ := db.Collection("chat_messages").CountDocuments(ctx, bson.D{{Key: "chat_id", Value: c.UUID}}); pages != 4 {
		t.Fatalf("%d pages, want 4", pages)
	}
	box := store.NewOutbox(db)
	pending, err := box.Pending(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	where := map[string]outbox.Ref{}
	for _, p := range pending {
		where[p.Event.ID] = p.Ref
	}
	for i, ev := range evs {
		if where[ev.ID] != refs[i] {
			t.Fatalf("event of message %d in %v, want %v", i+1, where[ev.ID], refs[i])
		}
	}
	if err := box.Ack(ctx, pending); err != nil {
		t.Fatal(err)
	}
	if left, err := box.Pending(ctx, 500); err != nil || len(left) != 0 {
		t.Fatalf("%d events left after their removal (%v)", len(left), err)
	}
	chatWith(t, repo, &stored, "later", 30)
	again, msgs := wholeChat(t, repo, c.UUID)
	if again.Messages != 231 || msgs[200].UUID != "m201" || msgs[230].UUID != "later231" {
		t.Fatalf("after 30 more: %d messages, the 201st %s, the last %s", again.Messages, msgs[200].UUID, msgs[230].UUID)
	}
}

// A move to a page repeated (after a crash between the page's write and the chat's, or after a
// vote changed the chat meanwhile) leaves a second, newer copy of a message in its page: readers
// see the newer one once, and a vote or a deletion reaches both.
func TestRepeatedMovesKeepOneCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	c := started(t, repo, "moved")
	chatWith(t, repo, &c, "m", 39)
	newer, err := repo.Message(ctx, "p", "b", "m3")
	if err != nil {
		t.Fatal(err)
	}
	newer.Content = "newer"
	if _, err := db.Collection("chat_messages").UpdateOne(ctx, bson.D{{Key: "_id", Value: "moved:0"}},
		bson.D{{Key: "$push", Value: bson.D{{Key: "messages", Value: newer}}}}); err != nil {
		t.Fatal(err)
	}
	_, msgs := wholeChat(t, repo, c.UUID)
	if len(msgs) != 40 || msgs[2].Content != "newer" {
		t.Fatalf("%d messages, the third %q", len(msgs), msgs[2].Content)
	}
	newer.Upvotes = 1
	if _, err := repo.UpdateMessage(ctx, newer, outbox.New(ctx, outbox.ChatMessageUpdated, "p", "b", nil)); err != nil {
		t.Fatal(err)
	}
	if _, msgs = wholeChat(t, repo, c.UUID); msgs[2].Upvotes != 1 {
		t.Fatalf("the voted message reads %+v", msgs[2])
	}
	if _, err := repo.DeleteMessage(ctx, newer, outbox.New(ctx, outbox.ChatMessageDeleted, "p", "b", nil)); err != nil {
		t.Fatal(err)
	}
	c, err = repo.Get(ctx, "p", "b", c.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err = repo.Range(ctx, c, 1, c.Messages); err != nil || len(msgs) != 39 || msgs[2].Seq != 4 {
		t.Fatalf("after the deletion %d messages (%v)", len(msgs), err)
	}
}

// Writers holding an older copy of the chat (two turns at once, a run finishing while the user
// writes) each get a number of their own: no message is lost or numbered twice. Each writer
// retries at most once per write that came before its own, so a dozen at once all succeed.
func TestConcurrentAppendsAreAllKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	c := started(t, repo, "busy")
	at := c.CreatedAt
	const rounds, writers = 6, 12
	for round := range rounds {
		var wg sync.WaitGroup
		for w := range writers {
			copyOf := c
			wg.Go(func() {
				id := fmt.Sprintf("%d-%d", round, w)
				m := chats.Message{UUID: id, ChatID: c.UUID, Role: chats.RoleUser, Content: id, CreatedAt: at, UpdatedAt: at}
				if _, err := repo.Append(ctx, &copyOf, &m, outbox.New(ctx, outbox.ChatMessageCreated, "p", "b", nil), nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	_, msgs := wholeChat(t, repo, c.UUID)
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m.UUID] || m.Content != m.UUID && m.UUID != "first" {
			t.Fatalf("message %s stored twice or changed", m.UUID)
		}
		seen[m.UUID] = true
	}
	if len(msgs) != 1+rounds*writers {
		t.Fatalf("%d messages, want %d", len(msgs), 1+rounds*writers)
	}
}

// A chat stored before chats kept their recent messages (all its messages in pages, no revision)
// reads as it was and goes on: its next messages are kept with it, and the page they later move
// to keeps what it held.
func TestChatsStoredInPagesGoOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	repo := store.NewChats(db)
	at := time.Now().UTC().Truncate(time.Millisecond)
	old := []chats.Message{
		{UUID: "old1", ChatID: "legacy", Seq: 1, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at},
		{UUID: "old2", ChatID: "legacy", Seq: 2, Role: chats.RoleAgent, Content: "hello", CreatedAt: at, UpdatedAt: at},
	}
	if _, err := db.Collection("chats").InsertOne(ctx, bson.D{{Key: "_id", Value: "legacy"}, {Key: "project_id", Value: "p"}, {Key: "bot_id", Value: "b"},
		{Key: "title", Value: "hi"}, {Key: "messages", Value: 2}, {Key: "created_at", Value: at}, {Key: "updated_at", Value: at}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("chat_messages").InsertOne(ctx, bson.D{{Key: "_id", Value: "legacy:0"}, {Key: "chat_id", Value: "legacy"},
		{Key: "project_id", Value: "p"}, {Key: "bot_id", Value: "b"}, {Key: "messages", Value: old}, {Key: "rev", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	c, msgs := wholeChat(t, repo, "legacy")
	if msgs[1].UUID != "old2" {
		t.Fatalf("stored messages %+v", msgs)
	}
	if m, err := repo.Message(ctx, "p", "b", "old1"); err != nil || m.Seq != 1 {
		t.Fatalf("old message: %+v %v", m, err)
	}
	chatWith(t, repo, &c, "m", 120)
	c, msgs = wholeChat(t, repo, "legacy")
	if c.Messages != 122 || msgs[0].UUID != "old1" || msgs[2].UUID != "m3" || msgs[121].UUID != "m122" {
		t.Fatalf("chat of %d messages: %s %s %s", c.Messages, msgs[0].UUID, msgs[2].UUID, msgs[121].UUID)
	}
	var page struct {
		Messages []chats.Message `bson:"messages"`
	}
	if err := db.Collection("chat_messages").FindOne(ctx, bson.D{{Key: "_id", Value: "legacy:0"}}).Decode(&page); err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 50 || page.Messages[0].UUID != "old1" || page.Messages[49].Seq != 50 {
		t.Fatalf("first page holds %d messages", len(page.Messages))
	}
}
