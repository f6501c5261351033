package devstack

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
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

func TestCommand(t *testing.T) {
	body, err := bson.Marshal(bson.D{{Key: "findAndModify", Value: "deals"}, {Key: "$db", Value: "crm"}})
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 21, 21+len(body))
	msg[12], msg[13] = 0xdd, 0x07 // OP_MSG (2013), little endian
	msg = append(msg, body...)
	for _, tc := range []struct {
		name           string
		msg            []byte
		wantCmd, wantC string
	}{
		{"OP_MSG", msg, "findAndModify", "crm.deals"},
		{"Truncated", msg[:30], "", ""},
		{"Short", msg[:10], "", ""},
		{"OtherOpcode", append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xd4, 0x07, 0, 0, 0, 0, 0, 0, 0}, body...), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cmd, coll := command(tc.msg); cmd != tc.wantCmd || coll != tc.wantC {
				t.Fatalf("command %q on %q, want %q on %q", cmd, coll, tc.wantCmd, tc.wantC)
			}
		})
	}
}

// BenchmarkEmbeddedStore measures the proxy's cost: point reads and updates of one document per
// client (all in one collection, the worst case), from 8 clients at once, through the proxy and
// straight to FerretDB (the baseline).
func BenchmarkEmbeddedStore(b *testing.B) {
	ctx := context.Background()
	m, err := StartMongo(ctx, b.TempDir(), "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	for _, target := range []struct{ name, uri string }{{"direct", "mongodb://" + m.proxy.backend + "/"}, {"proxy", m.URI}} {
		client, err := mongo.Connect(options.Client().ApplyURI(target.uri))
		if err != nil {
			b.Fatal(err)
		}
		coll := client.Database("bench").Collection(target.name)
		for _, op := range []struct {
			name string
			do   func(id int) error
		}{
			{"find", func(id int) error { return coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err() }},
			{"update", func(id int) error {
				_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				return err
			}},
		} {
			b.Run(target.name+"/"+op.name, func(b *testing.B) {
				var next atomic.Int64
				b.SetParallelism(4) // 8 clients on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					id := int(next.Add(1))
					if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 0}}}},
						options.UpdateOne().SetUpsert(true)); err != nil {
						b.Error(err)
						return
					}
					for pb.Next() {
						if err := op.do(id); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
		_ = client.Disconnect(ctx)
	}
}
