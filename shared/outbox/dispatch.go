package outbox

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentplane/agentplane/shared/kit/batch"
	"github.com/agentplane/agentplane/shared/kit/ids"
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
	// Marked is set on events the relay was told of (Store.Mark), not found by a scan.
	Marked bool
}

// Publisher sends an event to the stream and returns once the stream has stored it.
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// ErrUnpublishable wraps a publish error that no retry can cure (the event is larger than the
// stream accepts): the event is set aside instead of being retried.
var ErrUnpublishable = errors.New("outbox: the event cannot be published")

// Store finds and removes events in documents. Nothing the relay does every pass reads in
// proportion to the data: it reads the marks of events whose inline publish failed and the
// records of the processes that write events; it scans the documents themselves only when a
// process may have left events unmarked (it stopped between a write and its publish, or could
// not mark a failed publish).
type Store interface {
	// Pending scans every document that carries events and returns up to limit events still
	// in them, oldest first. It costs in proportion to the data: the relay runs it only when
	// a scan is due.
	Pending(ctx context.Context, limit int) ([]Pending, error)
	// Marked returns up to limit of the events marked for the relay, oldest first, reading the
	// marks and their documents (by id). Marks of events no longer in their document are removed.
	Marked(ctx context.Context, limit int) ([]Pending, error)
	// Mark tells the relay that the event eventID in ref is still to be published.
	Mark(ctx context.Context, ref Ref, eventID string) error
	// Ack removes published events from their documents, and their marks, in as few commands
	// as it can.
	Ack(ctx context.Context, ps []Pending) error
	// SetAside removes an event that cannot be published from its document (and its mark) and
	// keeps it (its data bounded as New bounds it), with the reason, where an operator can see it.
	SetAside(ctx context.Context, p Pending, reason string) error
	// Beat records that writer is alive; scan asks the relay for a scan.
	Beat(ctx context.Context, writer string, scan bool) error
	// Leave removes the record of writer, which stopped cleanly.
	Leave(ctx context.Context, writer string) error
	// ScanDue removes the records of writers last seen before staleBefore and of writers that
	// asked for a scan, and reports whether there were any.
	ScanDue(ctx context.Context, staleBefore time.Time) (bool, error)
}

// Dispatcher publishes events once their change is committed. A failed publish is not an error
// for the caller: the event stays in its document, marked, and the relay delivers it later.
type Dispatcher struct {
	pub   Publisher
	store Store
	log   *slog.Logger
	// writer is this process's name among the processes that write events.
	writer string
	// unmarked is set when a failed publish could not be marked: the next beat asks for a scan.
	unmarked atomic.Bool
	// setAside counts the events set aside by type.
	setAside func(typ string)

	// acks removes the events published inline from their documents, off the caller's path, in
	// batches.
	acks *batch.Batcher[Pending]

	// held are the published events whose removal waits for their document's next write
	// (DispatchHeld, Take), by document; stopping sends every event to acks instead.
	mu       sync.Mutex
	held     map[Ref][]Pending
	stopping bool
	// holdFor is how long an event waits for its document's next write before acks removes it.
	holdFor time.Duration
}

// NewDispatcher returns a dispatcher publishing to pub; setAside is told of every event set
// aside because it cannot be published.
func NewDispatcher(pub Publisher, store Store, log *slog.Logger, setAside func(typ string)) *Dispatcher {
	d := &Dispatcher{pub: pub, store: store, log: log, writer: ids.New(), setAside: setAside, held: map[Ref][]Pending{}, holdFor: holdFor}
	d.acks = batch.New(func(ps []Pending) {
		ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		defer cancel()
		d.ack(ctx, ps)
	})
	return d
}

// publishTimeout bounds the inline publish of a request: past it the relay takes over.
// recordTimeout bounds what follows a failed publish (marking the event, or setting it aside),
// which must not fail because the publish used up its time.
const (
	publishTimeout = 2 * time.Second
	recordTimeout  = 10 * time.Second
)

// holdFor is how long DispatchHeld's event waits for its document's next write: longer than
// most model calls (a chat's reply follows its user's message after one), far shorter than the
// stream's window of deduplication (a process that dies holding events leaves them to the
// relay's scan, which publishes them again).
const holdFor = 15 * time.Second

// Dispatch publishes ev, committed in the document ref, and has it removed from there after the
// caller's request: events published meanwhile are removed with it, one store command per
// collection. A process that stops before removing them leaves them to the relay's scan, which
// publishes them again (the stream deduplicates them by id).
func (d *Dispatcher) Dispatch(ctx context.Context, ref Ref, ev Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	d.deliver(ctx, Pending{Ref: ref, Event: ev}, d.acks.Add)
}

// DispatchHeld is Dispatch of an event whose document the caller writes again shortly (a chat,
// whose reply follows its user's message): once published, the event waits for that write,
// which takes it (Take) and removes it with its own change, saving the removal's write; when no
// write takes it within holdFor, or the process leaves, it is removed as Dispatch's are.
func (d *Dispatcher) DispatchHeld(ctx context.Context, ref Ref, ev Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	d.deliver(ctx, Pending{Ref: ref, Event: ev}, d.hold)
}

// hold keeps p, published, for its document's next write.
func (d *Dispatcher) hold(p Pending) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		d.acks.Add(p)
		return
	}
	if len(d.held[p.Ref]) == 0 {
		time.AfterFunc(d.holdFor, func() { d.Release(d.Take(p.Ref)) })
	}
	d.held[p.Ref] = append(d.held[p.Ref], p)
}

// Take returns the events of the document ref that wait for its next write (DispatchHeld): the
// caller removes them with its write of ref, or, should the write fail, hands them back with
// Release.
func (d *Dispatcher) Take(ref Ref) []Pending {
	d.mu.Lock()
	defer d.mu.Unlock()
	ps := d.held[ref]
	delete(d.held, ref)
	return ps
}

// Release has the events ps, taken and not removed, removed as Dispatch's are.
func (d *Dispatcher) Release(ps []Pending) {
	for _, p := range ps {
		d.acks.Add(p)
	}
}

// deliver publishes p and hands it to published, which removes it from its document. An event
// that failed is marked for the relay (unless it is already); one that can never be published is
// set aside. It reports whether p is dealt with (published or set aside).
func (d *Dispatcher) deliver(ctx context.Context, p Pending, published func(Pending)) bool {
	err := d.pub.Publish(ctx, p.Event)
	switch {
	case errors.Is(err, ErrUnpublishable):
		d.setAsideEvent(ctx, p, err)
		return true
	case err != nil:
		d.log.Warn("event not published yet; the relay will retry", "event_id", p.Event.ID, "type", p.Event.Type, "error", err)
		d.mark(ctx, p)
		return false
	}
	published(p)
	return true
}

func (d *Dispatcher) ack(ctx context.Context, ps []Pending) {
	if err := d.store.Ack(ctx, ps); err != nil {
		d.log.Warn("published events not yet removed from their documents; they will be published again and deduplicated", "events", len(ps), "error", err)
	}
}

func (d *Dispatcher) mark(ctx context.Context, p Pending) {
	if p.Marked {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := d.store.Mark(ctx, p.Ref, p.Event.ID); err != nil {
		d.unmarked.Store(true)
		d.log.Warn("unpublished event not marked; a scan will find it", "event_id", p.Event.ID, "error", err)
	}
}

func (d *Dispatcher) setAsideEvent(ctx context.Context, p Pending, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	kept := p
	kept.Event.Data, kept.Event.Omitted = bound(p.Event.Data)
	if err := d.store.SetAside(ctx, kept, cause.Error()); err != nil {
		d.log.Warn("event that cannot be published not yet set aside", "event_id", p.Event.ID, "error", err)
		d.mark(ctx, p)
		return
	}
	d.setAside(p.Event.Type)
	d.log.Error("event set aside: it cannot be published", "event_id", p.Event.ID, "type", p.Event.Type, "error", cause)
}

// relayBatch is how many events a relay pass reads at most.
const relayBatch = 500

// RelayOnce publishes the events marked for the relay and, when scan is set, those a scan of
// the documents finds; it returns how many it delivered, how many it left unpublished, and
// whether the scan (if any) saw everything (it reads at most a few hundred events).
//
// After the first failed publish of a pass, the events left are marked without trying them.
func (d *Dispatcher) RelayOnce(ctx context.Context, scan bool) (delivered, left int, complete bool, err error) {
	pending, err := d.store.Marked(ctx, relayBatch)
	if err != nil {
		return 0, 0, false, err
	}
	complete = true
	if scan {
		found, err := d.store.Pending(ctx, relayBatch)
		if err != nil {
			return 0, 0, false, err
		}
		complete = len(found) < relayBatch
		pending = append(pending, found...)
	}
	failed := false
	var published []Pending
	for _, p := range pending {
		if failed {
			d.mark(ctx, p)
			continue
		}
		if !d.deliver(ctx, p, func(p Pending) { published = append(published, p) }) {
			failed = true
			continue
		}
		delivered++
	}
	if len(published) > 0 {
		d.ack(ctx, published)
	}
	return delivered, len(pending) - delivered, complete, nil
}

// Timing of the writers' records: each process that writes events beats every beatInterval;
// one not seen for staleAfter has stopped without leaving (or cannot reach the store), and the
// relay scans for the events it may have left unmarked.
const (
	beatInterval = 10 * time.Second
	staleAfter   = time.Minute
)

// Beat records this process among the writers of events every beatInterval until ctx ends,
// asking for a scan when a failed publish could not be marked. Call Leave once the process has
// stopped writing.
func (d *Dispatcher) Beat(ctx context.Context) {
	t := time.NewTicker(beatInterval)
	defer t.Stop()
	for {
		scan := d.unmarked.Swap(false)
		if err := d.store.Beat(ctx, d.writer, scan); err != nil {
			if scan {
				d.unmarked.Store(true)
			}
			if ctx.Err() == nil {
				d.log.Warn("outbox writer heartbeat", "error", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Leave removes this process from the writers of events; a process that could not mark a failed
// publish asks for a scan instead.
func (d *Dispatcher) Leave(ctx context.Context) error {
	d.mu.Lock()
	d.stopping = true
	for ref, ps := range d.held {
		delete(d.held, ref)
		d.Release(ps)
	}
	d.mu.Unlock()
	d.acks.Wait()
	if d.unmarked.Load() {
		return d.store.Beat(ctx, d.writer, true)
	}
	return d.store.Leave(ctx, d.writer)
}

// Relay runs RelayOnce every interval until ctx ends, telling backlog what each pass left. It
// scans the documents when it starts (events of processes that stopped before any relay ran)
// and whenever a writer stopped without leaving or asked for it, until a scan saw everything.
func (d *Dispatcher) Relay(ctx context.Context, interval time.Duration, backlog func(left int)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	scan, scanFrom := true, time.Now()
	for {
		if !scan {
			due, err := d.store.ScanDue(ctx, time.Now().Add(-staleAfter))
			if err != nil && ctx.Err() == nil {
				d.log.Warn("outbox relay: writers", "error", err)
			}
			scan, scanFrom = due, time.Now()
		}
		n, left, complete, err := d.RelayOnce(ctx, scan)
		switch {
		case err != nil && ctx.Err() == nil:
			d.log.Warn("outbox relay", "error", err)
		case err == nil:
			if scan && complete {
				// A scan reads every document that can carry events: its time grows with the data.
				d.log.Info("outbox relay: scan complete", "took", time.Since(scanFrom).Round(time.Millisecond).String())
			}
			scan = scan && !complete
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
