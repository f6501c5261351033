package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// embedded starts the embedded store for the test and returns a client of it through the proxy.
func embedded(t *testing.T) *mongo.Client {
	t.Helper()
	ctx := context.Background()
	m, err := StartMongo(ctx, t.TempDir(), "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(ctx) })
	client, err := mongo.Connect(options.Client().ApplyURI(m.URI).SetMaxPoolSize(16))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(ctx) })
	return client
}

// The embedded store applies concurrent updates of one document atomically, as MongoDB does:
// no $inc, $push or findAndModify is lost to another running at the same time, across
// connections.
func TestEmbeddedUpdatesAreAtomic(t *testing.T) {
	ctx := context.Background()
	client := embedded(t)
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

// A write of one document conditional on more than its _id (a revision, "not deleted") applies
// exactly when the document matches the whole filter, through the proxy that narrows it to its
// _id: updates and findAndModify, matched and not, with the other documents untouched.
func TestConditionalWritesByID(t *testing.T) {
	ctx := context.Background()
	client := embedded(t)
	coll := client.Database("byid").Collection("docs")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: 1}, {Key: "n", Value: 0}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "rev", Value: 1}, {Key: "n", Value: 0}, {Key: "deleted_at", Value: "yesterday"}},
	}); err != nil {
		t.Fatal(err)
	}
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}, {Key: "rev", Value: 1}}}}
	live := bson.E{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: false}}}
	update := func(id string, rev int) int64 {
		res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "rev", Value: rev}, live}, inc)
		if err != nil {
			t.Fatal(err)
		}
		return res.ModifiedCount
	}
	findAndModify := func(id string, rev int) (int, error) {
		var got struct{ N int }
		err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: id}, {Key: "rev", Value: rev}, live}, inc,
			options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
		return got.N, err
	}
	for _, c := range []struct {
		name string
		do   func() bool
	}{
		{"an update of the right revision applies", func() bool { return update("a", 1) == 1 }},
		{"an update of a stale revision does not", func() bool { return update("a", 1) == 0 }},
		{"an update of a deleted document does not", func() bool { return update("b", 1) == 0 }},
		{"an update of a missing document does not", func() bool { return update("c", 1) == 0 }},
		{"a findAndModify of the right revision applies and returns the change", func() bool { n, err := findAndModify("a", 2); return err == nil && n == 2 }},
		{"a findAndModify of a stale revision finds nothing", func() bool {
			_, err := findAndModify("a", 2)
			return errors.Is(err, mongo.ErrNoDocuments)
		}},
		{"a findAndModify of a deleted document finds nothing", func() bool {
			_, err := findAndModify("b", 1)
			return errors.Is(err, mongo.ErrNoDocuments)
		}},
	} {
		if !c.do() {
			t.Errorf("%s: it did not", c.name)
		}
	}
	var a, b struct{ N, Rev int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "a"}}).Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "b"}}).Decode(&b); err != nil {
		t.Fatal(err)
	}
	if a.N != 2 || a.Rev != 3 || b.N != 0 || b.Rev != 1 {
		t.Fatalf("a is %+v and b %+v after the writes, want 2 changes of a and none of b", a, b)
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

// BenchmarkConditionalWrite measures a write of one document conditional on more than its _id (a
// revision) in a collection of 10,000 documents, straight to FerretDB (the baseline: it decodes the
// whole collection) and through the proxy (which narrows it to the _id), with the _id index the
// service makes (IndexIDs).
func BenchmarkConditionalWrite(b *testing.B) {
	ctx := context.Background()
	m, err := StartMongo(ctx, b.TempDir(), "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	const docs = 10_000
	for _, target := range []struct{ name, uri string }{{"direct", "mongodb://" + m.proxy.backend + "/"}, {"proxy", m.URI}} {
		client, err := mongo.Connect(options.Client().ApplyURI(target.uri))
		if err != nil {
			b.Fatal(err)
		}
		coll := client.Database("bench").Collection("conditional_" + target.name)
		batch := make([]any, 0, docs)
		for i := range docs {
			batch = append(batch, bson.D{{Key: "_id", Value: fmt.Sprintf("d%05d", i)}, {Key: "rev", Value: 0}})
		}
		if _, err := coll.InsertMany(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if err := m.IndexIDs(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		b.Run(target.name, func(b *testing.B) {
			for i := range b.N {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("d%05d", i%docs)}, {Key: "rev", Value: bson.D{{Key: "$gte", Value: 0}}}},
					bson.D{{Key: "$inc", Value: bson.D{{Key: "rev", Value: 1}}}})
				if err != nil || res.ModifiedCount != 1 {
					b.Fatal(err, res)
				}
			}
		})
		_ = client.Disconnect(ctx)
	}
}
