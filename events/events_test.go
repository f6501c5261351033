package events_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/devenv/eventstest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

// received collects what a consumer was given.
type received struct {
	mu     sync.Mutex
	events []outbox.Event
	got    chan struct{}
}

func (r *received) add(ev outbox.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *received) wait(t *testing.T, n int) []outbox.Event {
	t.Helper()
	for range n {
		select {
		case <-r.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d events, want %d", len(r.events), n)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]outbox.Event(nil), r.events...)
}

func setup(t *testing.T) (*events.Publisher, string) {
	t.Helper()
	pub, _ := eventstest.Stream(t)
	// A project of its own keeps each test's events apart on the shared stream.
	return pub, testenv.NewName()
}

func TestPublishAndConsume(t *testing.T) {
	pub, project := setup(t)
	ctx := context.Background()
	ev := outbox.New(context.Background(), outbox.DealCreated, project, "bot1", map[string]any{"title": "Big deal"})
	if err := pub.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	// The same event again, as the relay may send it: the stream keeps one.
	if err := pub.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	r := &received{got: make(chan struct{}, 10)}
	c, err := events.Consume(ctx, testenv.NATS(t), events.ConsumeConfig{Durable: "t-" + project, Filter: "events." + project + ".>"},
		func(_ context.Context, ev outbox.Event) error { r.add(ev); return nil }, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	got := r.wait(t, 1)
	if got[0].ID != ev.ID || got[0].Type != "deal.created" || got[0].BotID != "bot1" || string(got[0].Data) != `{"title":"Big deal"}` {
		t.Fatalf("got %+v", got[0])
	}
	select {
	case <-r.got:
		t.Fatal("the duplicate publish was delivered")
	case <-time.After(300 * time.Millisecond):
	}
	js, _ := jetstream.New(testenv.NATS(t))
	msg, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := msg.GetLastMsgForSubject(ctx, "events."+project+".deal.created")
	if err != nil || last.Header.Get("Nats-Msg-Id") != ev.ID {
		t.Fatalf("last message %v %v", last, err)
	}
}

func TestConsumeRetriesAndDrops(t *testing.T) {
	pub, project := setup(t)
	ctx := context.Background()
	failOnce := outbox.New(context.Background(), outbox.DealUpdated, project, "b", map[string]any{})
	poison := outbox.New(context.Background(), outbox.DealWon, project, "b", map[string]any{})
	var (
		mu    sync.Mutex
		calls = map[string]int{}
	)
	r := &received{got: make(chan struct{}, 10)}
	c, err := events.Consume(ctx, testenv.NATS(t), events.ConsumeConfig{Durable: "t-" + project, Filter: "events." + project + ".>", RetryDelay: 50 * time.Millisecond},
		func(_ context.Context, ev outbox.Event) error {
			mu.Lock()
			calls[ev.ID]++
			n := calls[ev.ID]
			mu.Unlock()
			r.add(ev)
			switch {
			case ev.ID == poison.ID:
				return events.Permanent(errors.New("cannot handle"))
			case n == 1:
				return errors.New("transient")
			}
			return nil
		}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, ev := range []outbox.Event{failOnce, poison} {
		if err := pub.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	r.wait(t, 3)
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if calls[failOnce.ID] != 2 || calls[poison.ID] != 1 {
		t.Fatalf("deliveries %v: want the failed event twice and the poison one once", calls)
	}
}

// An event travels in the trace of its change, even when the relay, which has no trace of its
// own, publishes it: the context rides in the message's traceparent header, not in the
// envelope, and the handler runs in it.
func TestTraceContextInHeaders(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	pub, project := setup(t)
	ctx := context.Background()
	change := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0xf0, 1}, TraceFlags: trace.FlagsSampled})
	ev := outbox.New(trace.ContextWithSpanContext(ctx, change), outbox.DealUpdated, project, "b", map[string]any{})
	if err := pub.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	handled := make(chan trace.SpanContext, 1)
	c, err := events.Consume(ctx, testenv.NATS(t), events.ConsumeConfig{Durable: "t-" + project, Filter: "events." + project + ".>"},
		func(ctx context.Context, _ outbox.Event) error {
			handled <- trace.SpanContextFromContext(ctx)
			return nil
		}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	select {
	case sc := <-handled:
		if sc.TraceID() != change.TraceID() {
			t.Fatalf("handled in trace %s, want %s", sc.TraceID(), change.TraceID())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not delivered")
	}
	js, _ := jetstream.New(testenv.NATS(t))
	stream, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, events.Subject(ev))
	if err != nil {
		t.Fatal(err)
	}
	if tp := msg.Header.Get("traceparent"); !strings.HasPrefix(tp, "00-"+change.TraceID().String()+"-") {
		t.Errorf("traceparent header %q", tp)
	}
	if strings.Contains(string(msg.Data), "trace") {
		t.Errorf("the envelope carries the trace: %s", msg.Data)
	}
}

// A consumer that starts, handles an event and stops leaves no goroutine behind, also when it
// is stopped while its handler is busy with the event (which then finishes).
func TestConsumeStopLeavesNoGoroutine(t *testing.T) {
	for _, tt := range []struct {
		name string
		// midEvent stops the consumer while its handler still handles the event.
		midEvent bool
	}{
		{"Idle", false},
		{"MidEvent", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pub, project := setup(t)
			ctx := context.Background()
			nc := testenv.NATS(t)
			cfg := events.ConsumeConfig{Durable: "t-" + project, Filter: "events." + project + ".>"}
			// The durable consumer lives in the NATS server, which runs in this process, and
			// outlives its clients by design: it is made (with the connection's subscription for
			// replies) before the goroutines are counted, as Consume makes it. Not by a first
			// Consume: the pull that one leaves at the server could take the event, which would
			// come again only after the minute of AckWait.
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.CreateOrUpdateConsumer(ctx, events.Stream, jetstream.ConsumerConfig{Durable: cfg.Durable, FilterSubject: cfg.Filter,
				AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: 20, DeliverPolicy: jetstream.DeliverAllPolicy}); err != nil {
				t.Fatal(err)
			}
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			handling, handled, release := make(chan outbox.Event, 1), make(chan struct{}), make(chan struct{})
			c, err := events.Consume(ctx, nc, cfg,
				func(_ context.Context, ev outbox.Event) error {
					defer close(handled)
					handling <- ev
					<-release
					return nil
				}, quiet)
			if err != nil {
				t.Fatal(err)
			}
			ev := outbox.New(ctx, outbox.DealCreated, project, "b", map[string]any{})
			if err := pub.Publish(ctx, ev); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-handling:
				if got.ID != ev.ID {
					t.Fatalf("handled %s, want %s", got.ID, ev.ID)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the event was not delivered")
			}
			if !tt.midEvent {
				close(release)
				<-handled
			}
			c.Stop()
			if tt.midEvent {
				close(release)
				<-handled
			}
		})
	}
}

// A follower of a run's progress that stops watching leaves no goroutine behind.
func TestRunRelayWatchLeavesNoGoroutine(t *testing.T) {
	nc := testenv.NATS(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	relay := events.NewRunRelay(nc)
	exec := testenv.NewName()
	notices, stop, err := relay.Watch(exec)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the server has the subscription before the notice
		t.Fatal(err)
	}
	relay.Notify(context.Background(), exec, agentruns.Progress{Delta: "Hello"})
	select {
	case p := <-notices:
		if p.Delta != "Hello" {
			t.Fatalf("notice %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the notice was not delivered")
	}
	stop()
}
