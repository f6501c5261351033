package devstack

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The embedded store applies concurrent updates of one document atomically, as MongoDB does:
// no $inc, $push or findAndModify is lost to another running at the same time, across
// connections.
func TestEmbeddedUpdatesAreAtomic(t *testing.T) {
	ctx := context.Background()
	m, err := StartMongo(ctx, t.TempDir(), "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	client, err := mongo.Connect(options.Client().ApplyURI(m.URI).SetMaxPoolSize(16))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("atomic").Collection("counters")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: 0}, {Key: "seen", Value: bson.A{}}}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				var err error
				if i%2 == 0 {
					_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}},
						bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "$push", Value: bson.D{{Key: "seen", Value: w*each + i}}}})
				} else {
					err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: "c"}},
						bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "$push", Value: bson.D{{Key: "seen", Value: w*each + i}}}}).Err()
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var got struct {
		N    int
		Seen []int
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.N != writers*each || len(got.Seen) != writers*each {
		t.Fatalf("n %d and %d values pushed after %d updates: updates were lost", got.N, len(got.Seen), writers*each)
	}
}

func TestCommandName(t *testing.T) {
	body, err := bson.Marshal(bson.D{{Key: "findAndModify", Value: "deals"}, {Key: "$db", Value: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 21, 21+len(body))
	msg[12], msg[13] = 0xdd, 0x07 // OP_MSG (2013), little endian
	msg = append(msg, body...)
	for _, tc := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"OP_MSG", msg, "findAndModify"},
		{"Truncated", msg[:30], ""},
		{"Short", msg[:10], ""},
		{"OtherOpcode", append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xd4, 0x07, 0, 0, 0, 0, 0, 0, 0}, body...), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandName(tc.msg); got != tc.want {
				t.Fatalf("command %q, want %q", got, tc.want)
			}
		})
	}
}
