package devstack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// An update of many statements answers through the proxy, which sends it a statement at a time,
// as MongoDB answers the whole command: n (matched and upserted) and nModified summed, upserted
// _ids and write errors by their statement's index, ordered statements stopping at the first
// error. (FerretDB's own answer to such a command with an error in it names statement 0 and
// drops the counts.) Both ways the driver sends the statements: in the command's body
// (RunCommand) and as a document sequence (BulkWrite).
func TestUpdateOfManyStatements(t *testing.T) {
	ctx := context.Background()
	m := startStore(t)
	client := connect(t, m.URI)
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	statements := bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "a"}}}, {Key: "u", Value: inc}},
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: 99}}}, {Key: "u", Value: inc}},
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "new"}}}, {Key: "u", Value: inc}, {Key: "upsert", Value: true}},
		// $inc of a string: a write error.
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "b"}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "s", Value: 1}}}}}},
		bson.D{{Key: "q", Value: bson.D{{Key: "kind", Value: "k"}}}, {Key: "u", Value: inc}, {Key: "multi", Value: true}},
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "missing"}}}, {Key: "u", Value: inc}},
	}
	models := []mongo.WriteModel{
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "a"}}).SetUpdate(inc),
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: 99}}).SetUpdate(inc),
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "new"}}).SetUpdate(inc).SetUpsert(true),
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "b"}}).SetUpdate(bson.D{{Key: "$inc", Value: bson.D{{Key: "s", Value: 1}}}}),
		mongo.NewUpdateManyModel().SetFilter(bson.D{{Key: "kind", Value: "k"}}).SetUpdate(inc),
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "missing"}}).SetUpdate(inc),
	}
	type index struct {
		Index int32 `bson:"index"`
	}
	type reply struct {
		N           int32   `bson:"n"`
		NModified   int32   `bson:"nModified"`
		Upserted    []index `bson:"upserted"`
		WriteErrors []index `bson:"writeErrors"`
	}
	for _, c := range []struct {
		ordered      bool
		n, modified  int32
		docs         map[string]int32
		upserted, ws []int32
	}{
		{true, 2, 1, map[string]int32{"a": 1, "b": 0, "new": 1}, []int32{2}, []int32{3}},
		{false, 4, 3, map[string]int32{"a": 2, "b": 1, "new": 1}, []int32{2}, []int32{3}},
	} {
		t.Run(fmt.Sprintf("ordered=%v", c.ordered), func(t *testing.T) {
			for _, way := range []string{"command", "bulk"} {
				coll := client.Database(fmt.Sprintf("%s%v", way, c.ordered)).Collection("c")
				if _, err := coll.InsertMany(ctx, []any{
					bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: 0}, {Key: "kind", Value: "k"}, {Key: "s", Value: "x"}},
					bson.D{{Key: "_id", Value: "b"}, {Key: "n", Value: 0}, {Key: "kind", Value: "k"}, {Key: "s", Value: "x"}},
				}); err != nil {
					t.Fatal(err)
				}
				if way == "command" {
					// Sent as it is: the driver's RunCommand answers a reply with write errors by an error.
					conn, err := net.Dial("tcp", m.proxy.ln.Addr().String())
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
					body, _ := bson.Marshal(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: statements},
						{Key: "ordered", Value: c.ordered}, {Key: "$db", Value: coll.Database().Name()}})
					if _, err := conn.Write(buildMessage(5, 0, []section{{kind: 0, docs: []bson.Raw{body}}})); err != nil {
						t.Fatal(err)
					}
					res, err := readMessage(conn)
					if err != nil {
						t.Fatal(err)
					}
					sections, ok := parseSections(res)
					if !ok || binary.LittleEndian.Uint32(res[8:]) != 5 {
						t.Fatalf("reply %x is no answer to the request", res)
					}
					var r reply
					if err := bson.Unmarshal(sections[0].docs[0], &r); err != nil {
						t.Fatal(err)
					}
					indexes := func(l []index) (out []int32) {
						for _, x := range l {
							out = append(out, x.Index)
						}
						return out
					}
					if r.N != c.n || r.NModified != c.modified || !slices.Equal(indexes(r.Upserted), c.upserted) || !slices.Equal(indexes(r.WriteErrors), c.ws) {
						t.Fatalf("reply %+v, want n %d, nModified %d, upserted %v, write errors %v", r, c.n, c.modified, c.upserted, c.ws)
					}
				} else {
					res, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(c.ordered))
					var bulk mongo.BulkWriteException
					if !errors.As(err, &bulk) || len(bulk.WriteErrors) != 1 || bulk.WriteErrors[0].Index != 3 {
						t.Fatalf("bulk write: %v, want the write error of statement 3", err)
					}
					if res.ModifiedCount != int64(c.modified) || !slices.Equal(slices.Collect(maps.Keys(res.UpsertedIDs)), []int64{2}) {
						t.Fatalf("bulk write %+v", res)
					}
				}
				cur, err := coll.Find(ctx, bson.D{})
				if err != nil {
					t.Fatal(err)
				}
				var docs []struct {
					ID string `bson:"_id"`
					N  int32
				}
				if err := cur.All(ctx, &docs); err != nil {
					t.Fatal(err)
				}
				got := map[string]int32{}
				for _, d := range docs {
					got[d.ID] = d.N
				}
				if !maps.Equal(got, c.docs) {
					t.Fatalf("%s: documents %v, want %v", way, got, c.docs)
				}
			}
		})
	}
}

// An update of more statements than FerretDB has connections to a database (the outbox's removal
// of the events of a burst) completes through the proxy; straight to FerretDB it holds every
// connection and waits for one more.
func TestUpdateOfMoreStatementsThanConnections(t *testing.T) {
	ctx := context.Background()
	coll := embedded(t).Database("outbox").Collection("chats")
	const docs = 250
	var seed []any
	var removals []mongo.WriteModel
	for i := range docs {
		id := fmt.Sprintf("chat%03d", i)
		seed = append(seed, bson.D{{Key: "_id", Value: id}, {Key: "_outbox", Value: bson.D{{Key: "e1", Value: "event"}}}})
		removals = append(removals, mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: id}}).
			SetUpdate(bson.D{{Key: "$unset", Value: bson.D{{Key: "_outbox.e1", Value: ""}}}}))
	}
	if _, err := coll.InsertMany(ctx, seed); err != nil {
		t.Fatal(err)
	}
	// Bounded so that a command that waits for a connection fails the test instead of hanging it.
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := coll.BulkWrite(bounded, removals, options.BulkWrite().SetOrdered(false))
	if err != nil || res.MatchedCount != docs || res.ModifiedCount != docs {
		t.Fatalf("removal of %d events: %+v %v", docs, res, err)
	}
	left, err := coll.CountDocuments(ctx, bson.D{{Key: "_outbox.e1", Value: bson.D{{Key: "$exists", Value: true}}}})
	if err != nil || left != 0 {
		t.Fatalf("%d events left (%v)", left, err)
	}
}
