package retention_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/agentplane/agentplane/shared/adapters/store"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/heartbeats"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/retention"
	"github.com/agentplane/agentplane/shared/subscribers"
	"github.com/agentplane/agentplane/shared/tools"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// keep is the retention of the tests; now is when they sweep.
const keep = 30 * 24 * time.Hour

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// fixture is a store holding, of each kind, old records (past the retention: "old-00" the
// oldest) and recent ones, and anonymous subscribers who chatted or signed in long ago.
func fixture(t *testing.T, old int) *mongo.Database {
	t.Helper()
	ctx := context.Background()
	db := testenv.Mongo(t)
	if err := store.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	beats, calls, subs, chans, mails := store.NewHeartbeats(db), store.NewTools(db), store.NewSubscribers(db), store.NewChannels(db), store.NewEmails(db)
	add := func(id string, at time.Time) {
		if _, err := beats.InsertFiring(ctx, heartbeats.Firing{ID: id, HeartbeatID: "h", ProjectID: "p", BotID: "b", ScheduledAt: at, Status: heartbeats.FiringSucceeded}); err != nil {
			t.Fatal(err)
		}
		if err := calls.RecordCall(ctx, tools.Call{ID: id, ProjectID: "p", BotID: "b", ToolID: "t", At: at}); err != nil {
			t.Fatal(err)
		}
		if err := subs.Insert(ctx, subscribers.Subscriber{ID: id, ProjectID: "p", BotID: "b", Anonymous: true, FirstSeen: at, LastSeen: at}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := chans.Take(ctx, channels.Message{ID: id, ConnectionID: "c", PlatformID: id, Status: channels.MessageAnswered, ReceivedAt: at}, outbox.Event{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chans.QueueSend(ctx, channels.Send{ID: id, ConnectionID: "c", Status: channels.SendSent, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := mails.Take(ctx, email.Email{ID: id, ProjectID: "p", BotID: "b", Direction: email.DirectionIn, Status: email.StatusAnswered, CreatedAt: at}, outbox.Event{}); err != nil {
			t.Fatal(err)
		}
	}
	// Inserted newest first, so that the store's natural order is not the oldest first.
	for i := old - 1; i >= 0; i-- {
		add(fmt.Sprintf("old-%02d", i), now.Add(-keep-time.Duration(old-i)*time.Hour))
	}
	for i := range 3 {
		add(fmt.Sprintf("recent-%d", i), now.Add(-keep+time.Duration(i+1)*time.Hour))
	}
	long := now.Add(-10 * keep)
	for _, s := range []subscribers.Subscriber{
		{ID: "chatted", ProjectID: "p", BotID: "b", Anonymous: true, FirstSeen: long, LastSeen: long, Chats: 2},
		{ID: "signed-in", ProjectID: "p", BotID: "b", ExternalID: "u-1", FirstSeen: long, LastSeen: long},
	} {
		if err := subs.Insert(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// ids returns the sorted _ids of coll.
func ids(t *testing.T, db *mongo.Database, coll string) []string {
	t.Helper()
	cur, err := db.Collection(coll).Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	slices.Sort(out)
	return out
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf(prefix, i))
	}
	return out
}

// A sweep deletes every firing, tool call and chatless anonymous subscriber past the retention,
// in batches, and keeps the recent ones and the subscribers who chatted or signed in.
func TestSweepDeletesWhatIsPastTheRetention(t *testing.T) {
	t.Parallel()
	db := fixture(t, 25)
	svc := retention.New(store.NewRetention(db), keep, 10, slog.New(slog.NewTextHandler(io.Discard, nil)))
	got, err := svc.Sweep(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if want := (retention.Counts{Firings: 25, ToolCalls: 25, Subscribers: 25, ChannelMessages: 25, ChannelSends: 25, Emails: 25}); got != want {
		t.Fatalf("deleted %+v, want %+v", got, want)
	}
	recent := names("recent-%d", 0, 3)
	for coll, want := range map[string][]string{
		"heartbeat_firings": recent,
		"tool_calls":        recent,
		"channel_messages":  recent,
		"channel_sends":     recent,
		"emails":            recent,
		"subscribers":       append([]string{"chatted"}, append(recent, "signed-in")...),
	} {
		if left := ids(t, db, coll); !slices.Equal(left, want) {
			t.Errorf("%s left %v, want %v", coll, left, want)
		}
	}
	if again, err := svc.Sweep(context.Background(), now); err != nil || again != (retention.Counts{}) {
		t.Fatalf("a second sweep deleted %+v, %v", again, err)
	}
}

// One delete removes at most its limit, the oldest first.
func TestDeleteIsBoundedByItsBatch(t *testing.T) {
	t.Parallel()
	db := fixture(t, 25)
	repo := store.NewRetention(db)
	before := now.Add(-keep)
	for _, kind := range []struct {
		coll   string
		delete func(context.Context, time.Time, int) (int, error)
		kept   []string
	}{
		{"heartbeat_firings", repo.DeleteFirings, nil},
		{"tool_calls", repo.DeleteToolCalls, nil},
		{"channel_messages", repo.DeleteChannelMessages, nil},
		{"channel_sends", repo.DeleteChannelSends, nil},
		{"emails", repo.DeleteEmails, nil},
		{"subscribers", repo.DeleteIdleSubscribers, []string{"chatted", "signed-in"}},
	} {
		n, err := kind.delete(context.Background(), before, 10)
		if err != nil || n != 10 {
			t.Fatalf("%s: deleted %d, %v; want 10", kind.coll, n, err)
		}
		want := append(names("old-%02d", 10, 25), names("recent-%d", 0, 3)...)
		want = append(want, kind.kept...)
		slices.Sort(want)
		if left := ids(t, db, kind.coll); !slices.Equal(left, want) {
			t.Errorf("%s left %v, want %v", kind.coll, left, want)
		}
	}
}
