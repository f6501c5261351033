// Package retention forgets what the deployment keeps only for a while: heartbeat firings, tool
// calls, channels' messages taken and answers sent, and agents' emails received and sent, older
// than the retention, and anonymous
// subscribers who never started a chat and were last seen before it. Subscribers with chats,
// and everything else, stay.
package retention

import (
	"context"
	"log/slog"
	"time"
)

// Repo deletes one batch of each kind of record: at most limit of those older than before,
// oldest first, answering how many it deleted.
type Repo interface {
	DeleteFirings(ctx context.Context, before time.Time, limit int) (int, error)
	DeleteToolCalls(ctx context.Context, before time.Time, limit int) (int, error)
	// DeleteIdleSubscribers deletes anonymous subscribers with no chat, last seen before before.
	DeleteIdleSubscribers(ctx context.Context, before time.Time, limit int) (int, error)
	// DeleteChannelMessages deletes the messages channels took (their idempotency keys: no
	// platform retries a message that late); DeleteChannelSends the answers kept for sending.
	DeleteChannelMessages(ctx context.Context, before time.Time, limit int) (int, error)
	DeleteChannelSends(ctx context.Context, before time.Time, limit int) (int, error)
	// DeleteEmails deletes agents' emails, received and sent (their threads' chats stay).
	DeleteEmails(ctx context.Context, before time.Time, limit int) (int, error)
}

// DefaultBatch is how many records one delete removes at most.
const DefaultBatch = 1000

// maxBatches bounds the batches of one kind a sweep deletes: what is left waits for the next one.
const maxBatches = 100

// Service applies the retention.
type Service struct {
	repo  Repo
	keep  time.Duration
	batch int
	log   *slog.Logger
}

// New returns the retention that keeps records for keep (0: for ever), deleting them in batches
// of at most batch.
func New(repo Repo, keep time.Duration, batch int, log *slog.Logger) *Service {
	return &Service{repo: repo, keep: keep, batch: batch, log: log}
}

// Counts are the records a sweep deleted, by kind.
type Counts struct {
	Firings, ToolCalls, Subscribers, ChannelMessages, ChannelSends, Emails int
}

// Sweep deletes the records older than the retention at now, a batch at a time, up to a bound
// of batches of each kind. A nil Service keeps everything.
func (s *Service) Sweep(ctx context.Context, now time.Time) (Counts, error) {
	var c Counts
	if s == nil || s.keep <= 0 {
		return c, nil
	}
	before := now.Add(-s.keep)
	for _, kind := range []struct {
		name   string
		delete func(context.Context, time.Time, int) (int, error)
		n      *int
	}{
		{"heartbeat firings", s.repo.DeleteFirings, &c.Firings},
		{"tool calls", s.repo.DeleteToolCalls, &c.ToolCalls},
		{"idle subscribers", s.repo.DeleteIdleSubscribers, &c.Subscribers},
		{"channel messages", s.repo.DeleteChannelMessages, &c.ChannelMessages},
		{"channel sends", s.repo.DeleteChannelSends, &c.ChannelSends},
		{"emails", s.repo.DeleteEmails, &c.Emails},
	} {
		for range maxBatches {
			n, err := kind.delete(ctx, before, s.batch)
			*kind.n += n
			if err != nil {
				return c, err
			}
			if n < s.batch {
				break
			}
		}
		if *kind.n > 0 {
			s.log.Info("records past their retention deleted", "kind", kind.name, "deleted", *kind.n, "before", before)
		}
	}
	return c, nil
}
