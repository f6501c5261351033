// Package eventstest gives tests the events' stream on the test NATS server (testenv's).
package eventstest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
)

// Stream makes sure the events' stream exists on the test NATS server and returns a publisher
// to it and the JetStream to read it back with.
func Stream(t testing.TB) (*events.Publisher, jetstream.JetStream) {
	t.Helper()
	nc := testenv.NATS(t)
	if err := events.EnsureStream(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	pub, err := events.NewPublisher(nc)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return pub, js
}
