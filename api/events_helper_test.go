package api_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
)

// streamEvents reads every event of project from the JetStream stream, in order, waiting until
// at least want have arrived (and a moment more, so extra events would show).
func streamEvents(t *testing.T, natsURL, project string, want int) []outbox.Event {
	t.Helper()
	nc := testenv.NATS(t)
	if natsURL != "" {
		nc = connect(t, natsURL)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"events." + project + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []outbox.Event
	for {
		wait := 5 * time.Second
		if len(got) >= want {
			wait = 300 * time.Millisecond
		}
		msg, err := cons.Next(jetstream.FetchMaxWait(wait))
		if err != nil {
			if len(got) < want {
				t.Fatalf("got %d events, want %d: %v", len(got), want, eventTypes(got))
			}
			return got
		}
		var ev outbox.Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
}

func eventTypes(evs []outbox.Event) []string {
	types := make([]string, len(evs))
	for i, ev := range evs {
		types[i] = ev.Type
	}
	return types
}

// connect opens a NATS connection to url that reconnects for ever, closed when t ends.
func connect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// eventsUntil reads the events of project from the JetStream stream, in order, up to and
// including the first one last holds for; it fails when the stream has no more events for
// 10 s before that one.
func eventsUntil(t *testing.T, project string, last func(outbox.Event) bool) []outbox.Event {
	t.Helper()
	js, err := jetstream.New(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"events." + project + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []outbox.Event
	for {
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("the awaited event did not come (%v); events so far: %v", err, eventTypes(got))
		}
		var ev outbox.Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
		if last(ev) {
			return got
		}
	}
}
