package outbox

import (
	"context"
	"log/slog"
	"time"
)

// Ref names the document an event rides in: the resource ("bot", "deal", ...) and its id.
type Ref struct {
	Resource string
	ID       string
}

// Pending is an event still in its document.
type Pending struct {
	Ref   Ref
	Event Event
}

// Publisher sends an event to the stream and returns once the stream has stored it.
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// Store finds and removes events in documents.
type Store interface {
	// Pending returns up to limit events still in documents, oldest first.
	Pending(ctx context.Context, limit int) ([]Pending, error)
	// Ack removes a published event from its document.
	Ack(ctx context.Context, ref Ref, eventID string) error
}

// Dispatcher publishes events once their change is committed. A failed publish is not an error
// for the caller: the event stays in its document and the relay delivers it later.
type Dispatcher struct {
	pub   Publisher
	store Store
	log   *slog.Logger
}

// NewDispatcher returns a dispatcher publishing to pub.
func NewDispatcher(pub Publisher, store Store, log *slog.Logger) *Dispatcher {
	return &Dispatcher{pub: pub, store: store, log: log}
}

// publishTimeout bounds the inline publish of a request: past it the relay takes over.
const publishTimeout = 2 * time.Second

// Dispatch publishes ev, committed in the document ref, and removes it from there.
func (d *Dispatcher) Dispatch(ctx context.Context, ref Ref, ev Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	d.deliver(ctx, Pending{Ref: ref, Event: ev})
}

func (d *Dispatcher) deliver(ctx context.Context, p Pending) bool {
	if err := d.pub.Publish(ctx, p.Event); err != nil {
		d.log.Warn("event not published yet; the relay will retry", "event_id", p.Event.ID, "type", p.Event.Type, "error", err)
		return false
	}
	if err := d.store.Ack(ctx, p.Ref, p.Event.ID); err != nil {
		d.log.Warn("published event not yet removed from its document; it will be published again and deduplicated", "event_id", p.Event.ID, "error", err)
	}
	return true
}

// RelayOnce publishes the events left in documents; it returns how many it delivered and how
// many of those it found it left unpublished (it reads at most a few hundred a pass).
func (d *Dispatcher) RelayOnce(ctx context.Context) (delivered, left int, err error) {
	pending, err := d.store.Pending(ctx, 500)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range pending {
		if !d.deliver(ctx, p) {
			break
		}
		delivered++
	}
	return delivered, len(pending) - delivered, nil
}

// Relay runs RelayOnce every interval until ctx ends, telling backlog what each pass left.
func (d *Dispatcher) Relay(ctx context.Context, interval time.Duration, backlog func(left int)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, left, err := d.RelayOnce(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("outbox relay", "error", err)
		} else if err == nil {
			backlog(left)
			if n > 0 {
				d.log.Info("outbox relay delivered events", "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
