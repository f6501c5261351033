package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/segmentio/encoding/json"

	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/stats"
)

// tailBatch bounds a batch of Tail. Once a batch has its first event, Tail takes every event
// that comes within tailWindow of it, then those that follow each other within tailGather: a
// batch folds its events into the statistics' pages with one write a page, and events coming a
// few at a time (a chat's question, then its answer) would otherwise make a batch, and so a
// write of their pages, each. The statistics are at most about tailWindow behind.
const (
	tailBatch  = 500
	tailWindow = 500 * time.Millisecond
	tailGather = 20 * time.Millisecond
)

// Tail returns a stats.Tail on nc: an ordered consumer of the events of filter (a subject
// filter such as "events.*.chat.message.>"), from the stream sequence after the one it is
// given, or from a time when it is given 0.
func Tail(nc *nats.Conn, filter string, log *slog.Logger) stats.Tail {
	return func(ctx context.Context, after uint64, since time.Time, each func(context.Context, []stats.Delivery) error) error {
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: after + 1}
		if after == 0 {
			cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, 0, &since
		}
		cons, err := js.OrderedConsumer(ctx, Stream, cfg)
		if err != nil {
			return fmt.Errorf("events: tail %s: %w", filter, err)
		}
		it, err := cons.Messages()
		if err != nil {
			return fmt.Errorf("events: tail %s: %w", filter, err)
		}
		defer it.Stop()
		for {
			batch, err := gatherBatch(ctx, it, log)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("events: tail %s: %w", filter, err)
			}
			if len(batch) == 0 {
				continue
			}
			if err := each(ctx, batch); err != nil {
				return err
			}
		}
	}
}

// gatherBatch waits for the next event, then takes those that follow within tailWindow of it
// and after that within tailGather of each other, up to tailBatch. A message that is not an
// event is skipped (and logged).
func gatherBatch(ctx context.Context, it jetstream.MessagesContext, log *slog.Logger) ([]stats.Delivery, error) {
	var batch []stats.Delivery
	var first time.Time
	for len(batch) < tailBatch {
		opt := jetstream.NextContext(ctx)
		if len(batch) > 0 {
			opt = jetstream.NextMaxWait(max(tailGather, tailWindow-time.Since(first)))
		}
		msg, err := it.Next(opt)
		if len(batch) > 0 && (errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)) {
			return batch, nil
		}
		if err != nil {
			return batch, err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return batch, err
		}
		var ev outbox.Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil || ev.ID == "" {
			log.Error("skipping a message that is not an event", "subject", msg.Subject(), "error", err)
			continue
		}
		if len(batch) == 0 {
			first = time.Now()
		}
		batch = append(batch, stats.Delivery{Seq: meta.Sequence.Stream, Event: ev})
	}
	return batch, nil
}
