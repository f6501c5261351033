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
// at least want have arrived; then it publishes a marker and reads up to it, so that events
// published before the marker, more than want, show. The marker is not returned.
func streamEvents(t *testing.T, natsURL, project string, want int) []outbox.Event {
	t.Helper()
	nc := testenv.NATS(t)
	if natsURL != "" {
		nc = connect(t, natsURL)
	}
	marker := "marker-" + testenv.NewName()
	published := false
	publish := func(js jetstream.JetStream) {
		raw, _ := json.Marshal(outbox.Event{ID: marker, Type: "test.marker", ProjectID: project})
		if _, err := js.Publish(context.Background(), events.SubjectPrefix+project+".test.marker", raw); err != nil {
			t.Fatal(err)
		}
		published = true
	}
	if want == 0 {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		publish(js)
	}
	got := readEvents(t, nc, project, func(js jetstream.JetStream, before []outbox.Event, ev outbox.Event) bool {
		if ev.ID == marker {
			return true
		}
		if !published && len(before)+1 >= want {
			publish(js)
		}
		return false
	})
	got = got[:len(got)-1]
	if len(got) < want {
		t.Fatalf("got %d events, want %d: %v", len(got), want, eventTypes(got))
	}
	return got
}

// readEvents reads the events of project from the JetStream stream of nc, in order, passing
// each to done with those before it, up to and including the first for which done is true; it
// fails when the stream has no more events for 10 s before that one. done may publish.
func readEvents(t *testing.T, nc *nats.Conn, project string, done func(js jetstream.JetStream, before []outbox.Event, ev outbox.Event) bool) []outbox.Event {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.SubjectPrefix + project + ".>"}})
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
		stop := done(js, got, ev)
		got = append(got, ev)
		if stop {
			return got
		}
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
	return readEvents(t, testenv.NATS(t), project, func(_ jetstream.JetStream, _ []outbox.Event, ev outbox.Event) bool { return last(ev) })
}
