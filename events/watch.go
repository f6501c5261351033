package events

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/segmentio/encoding/json"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Watch returns what streams a project's domain events of the types a NATS subject pattern
// selects ("handoff.>") as they are published, over core NATS: what is published while one
// watches, no replay. The stream ends with its context.
func Watch(nc *nats.Conn) func(ctx context.Context, projectID, types string) (<-chan outbox.Event, error) {
	return func(ctx context.Context, projectID, types string) (<-chan outbox.Event, error) {
		msgs := make(chan *nats.Msg, 64)
		sub, err := nc.ChanSubscribe(SubjectPrefix+projectID+"."+types, msgs)
		if err == nil {
			// Listening once the server has the subscription.
			flushed, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = nc.FlushWithContext(flushed)
			cancel()
		}
		if err != nil {
			if sub != nil {
				_ = sub.Unsubscribe()
			}
			return nil, apperr.Unavailablef("nats", err)
		}
		out := make(chan outbox.Event)
		go func() {
			defer close(out)
			defer func() { _ = sub.Unsubscribe() }()
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-msgs:
					var ev outbox.Event
					if json.Unmarshal(m.Data, &ev) != nil {
						continue
					}
					select {
					case out <- ev:
					case <-ctx.Done():
						return
					}
				}
			}
		}()
		return out, nil
	}
}
