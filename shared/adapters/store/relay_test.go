package store_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/eventstest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

// relayEnv is a relay on a database of its own, publishing to the test NATS server's stream.
type relayEnv struct {
	db      *mongo.Database
	project string
	js      jetstream.JetStream
	relay   *outbox.Dispatcher
	aside   []string
}

func newRelayEnv(t *testing.T, db *mongo.Database) *relayEnv {
	t.Helper()
	pub, js := eventstest.Stream(t)
	e := &relayEnv{db: db, project: testenv.NewName(), js: js}
	e.relay = outbox.NewDispatcher(pub, store.NewOutbox(db), slog.New(slog.NewTextHandler(io.Discard, nil)),
		func(typ string) { e.aside = append(e.aside, typ) })
	return e
}

// chat stores a new chat whose first message carries an event of data, left unpublished as a
// process stopped between the write and its publish would leave it.
func (e *relayEnv) chat(t *testing.T, data any) (outbox.Ref, outbox.Event) {
	t.Helper()
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	c := chats.Chat{UUID: testenv.NewName(), ProjectID: e.project, BotID: "b", CreatedAt: at, UpdatedAt: at}
	m := chats.Message{UUID: testenv.NewName(), ChatID: c.UUID, Role: chats.RoleUser, Content: "hi", CreatedAt: at, UpdatedAt: at}
	ev := outbox.New(ctx, outbox.ChatMessageCreated, e.project, "b", data)
	ref, err := store.NewChats(e.db).Start(ctx, &c, &m, ev)
	if err != nil {
		t.Fatal(err)
	}
	return ref, ev
}

// published reports whether the stream holds ev.
func (e *relayEnv) published(t *testing.T, ev outbox.Event) bool {
	t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(ctx, events.Subject(ev))
	if err != nil {
		return false
	}
	var got outbox.Event
	if err := json.Unmarshal(msg.Data, &got); err != nil {
		t.Fatal(err)
	}
	return got.ID == ev.ID
}

func (e *relayEnv) relayOnce(t *testing.T, scan bool) (delivered, left int) {
	t.Helper()
	delivered, left, complete, err := e.relay.RelayOnce(context.Background(), scan)
	if err != nil || !complete {
		t.Fatalf("relay pass: complete %v, error %v", complete, err)
	}
	return delivered, left
}

// An event whose inline publish failed is marked, and the relay's next pass publishes it
// without a scan; an event left unmarked (its process stopped between the write and the
// publish) is published by the scan the relay runs once that process's record is stale.
func TestRelayPublishesMarkedEventsAndScansForStoppedWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	e := newRelayEnv(t, db)
	o := store.NewOutbox(db)

	markedRef, marked := e.chat(t, map[string]string{"n": "marked"})
	if err := o.Mark(ctx, markedRef, marked.ID); err != nil {
		t.Fatal(err)
	}
	_, unmarked := e.chat(t, map[string]string{"n": "unmarked"})
	if err := o.Beat(ctx, "w1", false); err != nil {
		t.Fatal(err)
	}

	if n, left := e.relayOnce(t, false); n != 1 || left != 0 || !e.published(t, marked) {
		t.Fatalf("pass without a scan delivered %d, left %d; want the marked event published", n, left)
	}
	if n, _ := e.relayOnce(t, false); n != 0 {
		t.Fatalf("a published event was delivered again (%d): its mark was not removed", n)
	}
	if due, err := o.ScanDue(ctx, time.Now().Add(-time.Minute)); err != nil || due {
		t.Fatalf("scan due %v (error %v) while the only writer beats", due, err)
	}
	if e.published(t, unmarked) {
		t.Fatal("an unmarked event was published without a scan")
	}

	due, err := o.ScanDue(ctx, time.Now().Add(time.Second))
	if err != nil || !due {
		t.Fatalf("scan due %v (error %v) after the writer went stale", due, err)
	}
	if n, left := e.relayOnce(t, true); n != 1 || left != 0 || !e.published(t, unmarked) {
		t.Fatalf("scan delivered %d, left %d; want the unmarked event published", n, left)
	}
	if due, err := o.ScanDue(ctx, time.Now().Add(time.Second)); err != nil || due {
		t.Fatalf("scan due again (%v, error %v): the stale record was not removed", due, err)
	}
}

// A writer asking for a scan (it could not mark a failed publish) gets one, and a writer that
// left cleanly leaves nothing to scan for.
func TestWritersAskForAScanOrLeave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := store.NewOutbox(testenv.Mongo(t))
	for _, w := range []string{"asks", "leaves"} {
		if err := o.Beat(ctx, w, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Beat(ctx, "asks", true); err != nil {
		t.Fatal(err)
	}
	if err := o.Leave(ctx, "leaves"); err != nil {
		t.Fatal(err)
	}
	stale := time.Now().Add(-time.Minute)
	if due, err := o.ScanDue(ctx, stale); err != nil || !due {
		t.Fatalf("scan due %v (error %v), want the asking writer's scan", due, err)
	}
	if due, err := o.ScanDue(ctx, time.Now().Add(time.Second)); err != nil || due {
		t.Fatalf("scan due %v (error %v) after both records are gone", due, err)
	}
}

// counter counts, per collection, the commands a client sends and the documents their replies
// carry.
type counter struct {
	mu   sync.Mutex
	cmds map[string]int
	docs int
}

func (c *counter) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{
		Started: func(_ context.Context, ev *event.CommandStartedEvent) {
			coll, ok := ev.Command.Lookup(ev.CommandName).StringValueOK()
			if !ok {
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.cmds[ev.CommandName+" "+coll]++
		},
		Succeeded: func(_ context.Context, ev *event.CommandSucceededEvent) {
			batch, ok := ev.Reply.Lookup("cursor", "firstBatch").ArrayOK()
			if !ok {
				return
			}
			vals, _ := batch.Values()
			c.mu.Lock()
			defer c.mu.Unlock()
			c.docs += len(vals)
		},
	}
}

// A relay pass reads the relay's own small records and the documents of marked events by id,
// never the collections that grow with the data: with hundreds of chats stored, a pass reads
// as many documents as there are marked events and writers.
func TestRelayPassReadsWhatIsPendingNotWhatIsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	e := newRelayEnv(t, db)
	o := store.NewOutbox(db)
	for range 300 {
		ref, ev := e.chat(t, map[string]string{"n": "published"})
		if err := o.Ack(ctx, []outbox.Pending{{Ref: ref, Event: ev}}); err != nil {
			t.Fatal(err)
		}
	}
	ref, ev := e.chat(t, map[string]string{"n": "marked"})
	if err := o.Mark(ctx, ref, ev.ID); err != nil {
		t.Fatal(err)
	}

	c := &counter{cmds: map[string]int{}}
	client, err := mongo.Connect(options.Client().ApplyURI(testenv.MongoURI()).SetMonitor(c.monitor()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	watched := newRelayEnv(t, client.Database(db.Name()))
	if n, _, complete, err := watched.relay.RelayOnce(ctx, false); n != 1 || !complete || err != nil {
		t.Fatalf("relay pass delivered %d (complete %v, error %v), want the marked event", n, complete, err)
	}
	if _, err := store.NewOutbox(client.Database(db.Name())).ScanDue(ctx, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	for cmd := range c.cmds {
		if strings.HasPrefix(cmd, "find ") && cmd != "find outbox_marks" && cmd != "find outbox_writers" && cmd != "find chats" {
			t.Errorf("the relay pass ran %q", cmd)
		}
	}
	if c.cmds["find chats"] != 1 || c.docs > 2 {
		t.Fatalf("the relay pass read %d documents with commands %v; want the mark and its chat page only", c.docs, c.cmds)
	}
}

// An event the stream refuses for good (larger than a message may be) is set aside once, with
// its reason, and counted; it is not retried.
func TestUnpublishableEventsAreSetAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.Mongo(t)
	e := newRelayEnv(t, db)
	ref, _ := e.chat(t, map[string]string{"n": "small"})
	ev := outbox.New(ctx, outbox.ChatMessageCreated, e.project, "b", nil)
	ev.Data = json.RawMessage(`{"text":"` + strings.Repeat("word ", 250_000) + `"}`)
	if _, err := db.Collection("chats").UpdateOne(ctx, bson.D{{Key: "_id", Value: ref.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: outbox.Field + "." + ev.ID, Value: ev}}}}); err != nil {
		t.Fatal(err)
	}

	e.relay.Dispatch(ctx, ref, ev)
	if len(e.aside) != 1 || e.aside[0] != outbox.ChatMessageCreated {
		t.Fatalf("events set aside %v, want the large one", e.aside)
	}
	var kept struct {
		Reason string       `bson:"reason"`
		Event  outbox.Event `bson:"event"`
	}
	if err := db.Collection("outbox_aside").FindOne(ctx, bson.D{{Key: "_id", Value: ev.ID}}).Decode(&kept); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(kept.Reason, "maximum payload") || len(kept.Event.Data) > outbox.MaxData || !slices.Equal(kept.Event.Omitted, []string{"text"}) {
		t.Fatalf("set aside with reason %q, %d bytes of data omitting %v", kept.Reason, len(kept.Event.Data), kept.Event.Omitted)
	}
	if n, left := e.relayOnce(t, true); n != 1 || left != 0 {
		t.Fatalf("a scan after setting aside delivered %d and left %d; want only the small event", n, left)
	}
	if len(e.aside) != 1 {
		t.Fatalf("events set aside %v after the scan, want the one", e.aside)
	}
}
