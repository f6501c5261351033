package devstack

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startStore starts the embedded store for the test.
func startStore(t *testing.T) *Mongo {
	t.Helper()
	ctx := context.Background()
	m, err := StartMongo(ctx, t.TempDir(), "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(ctx) })
	return m
}

// connect returns a client of uri for the test.
func connect(t *testing.T, uri string) *mongo.Client {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMaxPoolSize(16))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client
}

// embedded starts the embedded store for the test and returns a client of it through the proxy.
func embedded(t *testing.T) *mongo.Client {
	t.Helper()
	return connect(t, startStore(t).URI)
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

// sideBySide starts the embedded store for the test and returns it with its collection name of
// database byid, straight to FerretDB (first) and through the proxy (second).
func sideBySide(t *testing.T, name string) (*Mongo, [2]*mongo.Collection) {
	t.Helper()
	m := startStore(t)
	var colls [2]*mongo.Collection
	for i, uri := range []string{"mongodb://" + m.proxy.backend + "/", m.URI} {
		colls[i] = connect(t, uri).Database("byid").Collection(name)
	}
	return m, colls
}

// findAll is what a find of filter in coll with opts (nil: none) answers, each document printed.
func findAll(t *testing.T, coll *mongo.Collection, filter bson.D, opts *options.FindOptionsBuilder) []string {
	t.Helper()
	if opts == nil {
		opts = options.Find()
	}
	cur, err := coll.Find(context.Background(), filter, opts)
	if err != nil {
		t.Fatalf("%v: %v", filter, err)
	}
	var docs []bson.D
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatalf("%v: %v", filter, err)
	}
	var out []string
	for _, d := range docs {
		out = append(out, fmt.Sprint(d))
	}
	return out
}

// request is an OP_MSG of the command body on database crm.
func request(t *testing.T, body bson.D) []byte {
	t.Helper()
	raw, err := bson.Marshal(append(body, bson.E{Key: "$db", Value: "crm"}))
	if err != nil {
		t.Fatal(err)
	}
	return buildMessage(7, 0, []section{{kind: 0, docs: []bson.Raw{raw}}})
}

// A find of one document by its _id and more (the project, "not deleted") answers through the
// proxy, which sends it as an aggregation pushed down to the _id, what FerretDB answers to the find
// itself when it decodes the whole collection: matched or not, with a projection, a skip, a sort,
// and in batches.
func TestConditionalReadsByID(t *testing.T) {
	ctx := context.Background()
	_, colls := sideBySide(t, "reads")
	if _, err := colls[0].InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "p"}, {Key: "rev", Value: 1}, {Key: "tags", Value: bson.A{"x", "y"}}},
		bson.D{{Key: "_id", Value: "b"}, {Key: "project_id", Value: "p"}, {Key: "rev", Value: 1}, {Key: "deleted_at", Value: "yesterday"}},
		bson.D{{Key: "_id", Value: "c"}, {Key: "project_id", Value: "q"}, {Key: "rev", Value: 2}},
	}); err != nil {
		t.Fatal(err)
	}
	live := bson.E{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: false}}}
	for _, c := range []struct {
		name   string
		filter bson.D
		opts   *options.FindOptionsBuilder
	}{
		{"of the project and live", bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "p"}, live}, nil},
		{"of another project", bson.D{{Key: "_id", Value: "c"}, {Key: "project_id", Value: "p"}}, nil},
		{"deleted", bson.D{{Key: "_id", Value: "b"}, {Key: "project_id", Value: "p"}, live}, nil},
		{"missing", bson.D{{Key: "_id", Value: "z"}, {Key: "project_id", Value: "p"}}, nil},
		{"with an operator", bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}, {Key: "tags", Value: "y"}}, nil},
		{"with $or", bson.D{{Key: "_id", Value: "c"}, {Key: "$or", Value: bson.A{bson.D{{Key: "rev", Value: 2}}, bson.D{{Key: "rev", Value: 3}}}}}, nil},
		{"with a projection", bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "p"}}, options.Find().SetProjection(bson.D{{Key: "rev", Value: 1}})},
		{"with an exclusion", bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "p"}}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "tags", Value: 0}})},
		{"skipped", bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "p"}}, options.Find().SetSkip(1)},
		{"sorted, limited, in batches of one", bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "p"}},
			options.Find().SetSort(bson.D{{Key: "rev", Value: -1}}).SetLimit(5).SetBatchSize(1)},
	} {
		var got [2]string
		for i, coll := range colls {
			got[i] = fmt.Sprint(findAll(t, coll, c.filter, c.opts))
		}
		if got[0] != got[1] {
			t.Errorf("%s: %s through the proxy, %s from FerretDB", c.name, got[1], got[0])
		}
	}
	var one struct{ Rev int }
	if err := colls[1].FindOne(ctx, bson.D{{Key: "_id", Value: "a"}, live}).Decode(&one); err != nil || one.Rev != 1 {
		t.Fatalf("FindOne through the proxy: %+v %v", one, err)
	}
}

// A find by a list of _ids answers through the proxy, which reads each document by its _id, what
// FerretDB answers to the find itself when it decodes the whole collection: the documents found,
// none when none is, with a projection; a reply that would be too large goes as the find itself.
func TestFindByIDs(t *testing.T) {
	ctx := context.Background()
	m, colls := sideBySide(t, "list")
	var docs []any
	for i := range 30 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("d%02d", i)}, {Key: "n", Value: i}, {Key: "text", Value: strings.Repeat("x", 100)}})
	}
	if _, err := colls[0].InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	in := func(ids ...string) bson.D {
		return bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: append([]string{}, ids...)}}}}
	}
	for _, c := range []struct {
		name   string
		filter bson.D
		opts   *options.FindOptionsBuilder
	}{
		{"some found, one missing", in("d03", "d17", "zz", "d29"), nil},
		{"none found", in("zz", "yy"), nil},
		{"an empty list", in(), nil},
		{"with a projection", in("d01", "d02"), options.Find().SetProjection(bson.D{{Key: "n", Value: 1}})},
	} {
		var got [2][]string
		for i, coll := range colls {
			got[i] = findAll(t, coll, c.filter, c.opts)
			slices.Sort(got[i])
		}
		if !slices.Equal(got[0], got[1]) {
			t.Errorf("%s: %v through the proxy, %v from FerretDB", c.name, got[1], got[0])
		}
	}

	// The reply's bound: 3 documents of 100 bytes and more do not fit in 250 bytes.
	server, err := net.Dial("tcp", m.proxy.backend)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	body, _ := bson.Marshal(bson.D{{Key: "find", Value: "list"}, {Key: "filter", Value: in("d01", "d02", "d03")}, {Key: "$db", Value: "byid"}})
	req := buildMessage(9, 0, []section{{kind: 0, docs: []bson.Raw{body}}})
	ids, one, ok := byIDs(req)
	if !ok {
		t.Fatal("a find by a list of _ids is not read one by one")
	}
	if _, ok, err := expand(server, req, ids, one, 250); ok || err != nil {
		t.Fatalf("a reply over the bound was built (%v)", err)
	}
	reply, ok, err := expand(server, req, ids, one, maxReply)
	if !ok || err != nil {
		t.Fatalf("no reply within the bound (%v)", err)
	}
	sections, _ := parseSections(reply)
	if n, _ := sections[0].docs[0].Lookup("cursor", "firstBatch").Array().Values(); len(n) != 3 || binary.LittleEndian.Uint32(reply[8:]) != 9 {
		t.Fatalf("reply %s", sections[0].docs[0])
	}
}

// byIDs reads a find by a list of string _ids, and nothing else, one document at a time.
func TestByIDs(t *testing.T) {
	in := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"a", "b"}}}}}
	for _, c := range []struct {
		name string
		body bson.D
		ok   bool
	}{
		{"by a list of _ids", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: in}}, true},
		{"with a batch size and projection", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: in}, {Key: "batchSize", Value: int32(5)}, {Key: "projection", Value: bson.D{{Key: "text", Value: 1}}}}, true},
		{"and more", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: append(slices.Clone(in), bson.E{Key: "gen", Value: "g"})}}, false},
		{"of _ids not strings", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}}}, false},
		{"by a range of _ids", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: "a"}}}}}}, false},
		{"sorted", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: in}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}}, false},
		{"limited", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: in}, {Key: "limit", Value: int64(1)}}, false},
		{"of too many", bson.D{{Key: "find", Value: "chunks"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: make(bson.A, maxIDs+1)}}}}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ids, one, ok := byIDs(request(t, c.body))
			if ok != c.ok {
				t.Fatalf("read one by one: %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if !slices.Equal(ids, []string{"a", "b"}) {
				t.Fatalf("ids %v", ids)
			}
			sections, _ := parseSections(one("b"))
			body := sections[0].docs[0]
			if f := body.Lookup("filter").String(); f != `{"_id": "b"}` {
				t.Fatalf("one asks for %s", body)
			}
			if first, _ := body.IndexErr(0); first.Key() != "find" {
				t.Fatalf("one asks %s", body)
			}
		})
	}
}

// byIDFind sends a find by _id and more as the aggregation pushed down to the _id, and leaves any
// other find as it is.
func TestByIDFind(t *testing.T) {
	byIDAnd := bson.D{{Key: "_id", Value: "d1"}, {Key: "project_id", Value: "p"}}
	for _, c := range []struct {
		name string
		body bson.D
		want string // the pipeline, or "" when the find passes as it is
	}{
		{"by _id and more", bson.D{{Key: "find", Value: "deals"}, {Key: "filter", Value: byIDAnd}, {Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}},
			`[{"$match": {"_id": "d1"}},{"$match": {"_id": "d1","project_id": "p"}},{"$limit": {"$numberLong":"1"}}]`},
		{"with skip and projection", bson.D{{Key: "find", Value: "deals"}, {Key: "filter", Value: byIDAnd}, {Key: "skip", Value: int64(2)}, {Key: "projection", Value: bson.D{{Key: "title", Value: 1}}}},
			`[{"$match": {"_id": "d1"}},{"$match": {"_id": "d1","project_id": "p"}},{"$skip": {"$numberLong":"2"}},{"$project": {"title": {"$numberInt":"1"}}}]`},
		{"by _id alone", bson.D{{Key: "find", Value: "deals"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: "d1"}}}}, ""},
		{"by an _id that is not a string", bson.D{{Key: "find", Value: "deals"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}, {Key: "project_id", Value: "p"}}}}, ""},
		{"without an _id", bson.D{{Key: "find", Value: "deals"}, {Key: "filter", Value: bson.D{{Key: "project_id", Value: "p"}, {Key: "status", Value: "won"}}}}, ""},
		{"with a hint", bson.D{{Key: "find", Value: "deals"}, {Key: "filter", Value: byIDAnd}, {Key: "hint", Value: "_id_"}}, ""},
		{"projecting a slice", bson.D{{Key: "find", Value: "deals"}, {Key: "filter", Value: byIDAnd}, {Key: "projection", Value: bson.D{{Key: "log", Value: bson.D{{Key: "$slice", Value: 2}}}}}}, ""},
		{"an update", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: byIDAnd}, {Key: "u", Value: bson.D{}}}}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			narrowed, ok := byIDFind(request(t, c.body))
			if !ok {
				if c.want != "" {
					t.Fatal("passed as it is")
				}
				return
			}
			if c.want == "" {
				t.Fatal("narrowed")
			}
			sections, _ := parseSections(narrowed)
			body := sections[0].docs[0]
			if coll, _ := body.Lookup("aggregate").StringValueOK(); coll != "deals" {
				t.Fatalf("sent %s", body)
			}
			if db, _ := body.Lookup("$db").StringValueOK(); db != "crm" {
				t.Fatalf("sent %s", body)
			}
			if got := strings.ReplaceAll(body.Lookup("pipeline").String(), " ", ""); got != strings.ReplaceAll(c.want, " ", "") {
				t.Fatalf("pipeline %s, want %s", got, c.want)
			}
		})
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

// oneDocument names the document an update or findAndModify can change only when it is one,
// named by a string _id; the proxy runs any other alone in its collection.
func TestOneDocument(t *testing.T) {
	byID := bson.D{{Key: "_id", Value: "d1"}, {Key: "rev", Value: 3}}
	statement := func(q bson.D, more ...bson.E) bson.D {
		return append(bson.D{{Key: "q", Value: q}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}, more...)
	}
	for _, c := range []struct {
		name string
		body bson.D
		want string // "": none
	}{
		{"update by _id", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{statement(bson.D{{Key: "_id", Value: "d1"}})}}}, "d1"},
		{"update by _id and more", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{statement(byID)}}}, "d1"},
		{"upsert by _id", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{statement(byID, bson.E{Key: "upsert", Value: true})}}}, "d1"},
		{"findAndModify by _id", bson.D{{Key: "findAndModify", Value: "deals"}, {Key: "query", Value: byID}, {Key: "update", Value: bson.D{}}}, "d1"},
		{"multi", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{statement(byID, bson.E{Key: "multi", Value: true})}}}, ""},
		{"two statements", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{statement(byID), statement(bson.D{{Key: "_id", Value: "d2"}})}}}, ""},
		{"no _id", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{statement(bson.D{{Key: "project_id", Value: "p"}})}}}, ""},
		{"an _id operator", bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{statement(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"d1", "d2"}}}}})}}}, ""},
		{"an _id that is not a string", bson.D{{Key: "findAndModify", Value: "deals"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}}, ""},
		{"findAndModify of no _id", bson.D{{Key: "findAndModify", Value: "deals"}, {Key: "query", Value: bson.D{{Key: "status", Value: "won"}}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, ok := oneDocument(request(t, c.body))
			if got := map[bool]string{true: id}[ok]; got != c.want {
				t.Fatalf("one document %q (%v), want %q", id, ok, c.want)
			}
		})
	}
}

// Updates of different documents of one collection do not wait for each other: while an update
// of one document holds its turn, an update of another completes, and the held document's own
// update completes once the turn is given back.
func TestUpdatesOfOtherDocumentsRunTogether(t *testing.T) {
	ctx := context.Background()
	m := startStore(t)
	coll := connect(t, m.URI).Database("crm").Collection("deals")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: 0}}, bson.D{{Key: "_id", Value: "b"}, {Key: "n", Value: 0}}}); err != nil {
		t.Fatal(err)
	}
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	held := request(t, bson.D{{Key: "update", Value: "deals"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "a"}}}, {Key: "u", Value: inc}}}}})
	// Given back at the end too, so that a failure leaves no connection waiting for the turn.
	release := sync.OnceFunc(m.proxy.lock("crm.deals", held))
	defer release()

	waiting := make(chan error, 1)
	go func() {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: bson.D{{Key: "$gte", Value: 0}}}}, inc)
		waiting <- err
	}()
	// Bounded so that a wait for the held turn fails the test instead of hanging it.
	other, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, filter := range []bson.D{{{Key: "_id", Value: "b"}}, {{Key: "_id", Value: "b"}, {Key: "n", Value: 1}}} {
		if res, err := coll.UpdateOne(other, filter, inc); err != nil || res.ModifiedCount != 1 {
			t.Fatalf("update of b while a is held: %+v %v", res, err)
		}
	}
	if err := coll.FindOneAndUpdate(other, bson.D{{Key: "_id", Value: "b"}}, inc).Err(); err != nil {
		t.Fatalf("findAndModify of b while a is held: %v", err)
	}
	// An update of many documents named by their _ids (the outbox's removal of published events)
	// waits only for those.
	byIDs := []mongo.WriteModel{
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "c"}}).SetUpdate(inc).SetUpsert(true),
		mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "b"}}).SetUpdate(inc),
	}
	if res, err := coll.BulkWrite(other, byIDs, options.BulkWrite().SetOrdered(false)); err != nil || res.ModifiedCount+res.UpsertedCount != 2 {
		t.Fatalf("update of b and c while a is held: %+v %v", res, err)
	}
	release()
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{"a": 1, "b": 4, "c": 1} {
		var got struct{ N int }
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got.N != want {
			t.Fatalf("%s: n %d, want %d (%v)", id, got.N, want, err)
		}
	}
}

// 32 connections updating two documents of one collection at once, each by its _id ($inc, a
// conditional $inc, findAndModify) and both together (an update of many documents, which runs
// alone in the collection, and one statement a document, which waits for the turns of both),
// lose no update.
func TestConcurrentUpdatesByIDLoseNothing(t *testing.T) {
	ctx := context.Background()
	client := embedded(t)
	coll := client.Database("atomic").Collection("counters")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "c0"}, {Key: "kind", Value: "counter"}, {Key: "n", Value: 0}},
		bson.D{{Key: "_id", Value: "c1"}, {Key: "kind", Value: "counter"}, {Key: "n", Value: 0}},
	}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 32, 10
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("c%d", w%2)
			for i := range each {
				var err error
				switch i % 5 {
				case 0:
					_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, inc)
				case 1:
					_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "kind", Value: "counter"}}, inc)
				case 2:
					err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: id}}, inc).Err()
				case 3:
					_, err = coll.UpdateMany(ctx, bson.D{{Key: "kind", Value: "counter"}}, inc)
				case 4:
					_, err = coll.BulkWrite(ctx, []mongo.WriteModel{
						mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "c1"}}).SetUpdate(inc),
						mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: "c0"}, {Key: "kind", Value: "counter"}}).SetUpdate(inc),
					}, options.BulkWrite().SetOrdered(false))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// Each document: 3/5 of its writers' updates by _id, and every writer's updates of both (one
	// of every five by a filter of no _id, one by their _ids).
	want := writers/2*each*3/5 + writers*each*2/5
	for _, id := range []string{"c0", "c1"} {
		var got struct{ N int }
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got.N != want {
			t.Fatalf("%s: n %d after %d updates (%v): updates were lost", id, got.N, want, err)
		}
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

// BenchmarkConditional measures a write and a read of one document conditional on more than its
// _id (a revision; a project), and a read of 20 documents by a list of _ids, in a collection of
// 10,000 documents, straight to FerretDB (the baseline: it decodes the whole collection) and
// through the proxy (which narrows them to the _id, or reads the 20 one by one), with the _id
// index the service makes (Reindex).
func BenchmarkConditional(b *testing.B) {
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
			batch = append(batch, bson.D{{Key: "_id", Value: fmt.Sprintf("d%05d", i)}, {Key: "project_id", Value: "p"}, {Key: "rev", Value: 0}})
		}
		if _, err := coll.InsertMany(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if err := m.Reindex(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		b.Run("update/"+target.name, func(b *testing.B) {
			for i := range b.N {
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("d%05d", i%docs)}, {Key: "rev", Value: bson.D{{Key: "$gte", Value: 0}}}},
					bson.D{{Key: "$inc", Value: bson.D{{Key: "rev", Value: 1}}}})
				if err != nil || res.ModifiedCount != 1 {
					b.Fatal(err, res)
				}
			}
		})
		b.Run("find/"+target.name, func(b *testing.B) {
			for i := range b.N {
				var doc struct{ Rev int }
				if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("d%05d", i%docs)}, {Key: "project_id", Value: "p"},
					{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: false}}}}).Decode(&doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("find20/"+target.name, func(b *testing.B) {
			for i := range b.N {
				ids := make([]string, 20)
				for j := range ids {
					ids[j] = fmt.Sprintf("d%05d", (i*20+j)%docs)
				}
				cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
				if err != nil {
					b.Fatal(err)
				}
				var found []bson.Raw
				if err := cur.All(ctx, &found); err != nil || len(found) != 20 {
					b.Fatal(len(found), err)
				}
			}
		})
		_ = client.Disconnect(ctx)
	}
}

// ReindexCommand sent through the proxy gives every collection of its database the SQLite
// indexes FerretDB reads, a unique _id lookup, and drops those it never reads (its own _id index
// on another expression, the non-unique ones), in the store's own process; uniqueness holds as
// before, every index is still listed, and a lookup index made before it was unique becomes
// unique. For a database the store does not have it fails, and makes none.
func TestReindexCommand(t *testing.T) {
	m := startStore(t)
	client := connect(t, m.URI)
	ctx := context.Background()
	db := client.Database("shop")
	for _, coll := range []string{"deals", "contacts"} {
		if _, err := db.Collection(coll).InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "email", Value: "a@x"}, {Key: "stage", Value: "won"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Collection("contacts").Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "stage", Value: 1}}, Options: options.Index().SetName("stage")},
		{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetName("email").SetUnique(true)},
	}); err != nil {
		t.Fatal(err)
	}
	files, err := sql.Open("sqlite", "file:"+filepath.Join(m.dir, "shop.sqlite")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	var deals string
	if err := files.QueryRowContext(ctx, `SELECT table_name FROM _ferretdb_collections WHERE name = 'deals'`).Scan(&deals); err != nil {
		t.Fatal(err)
	}
	// The lookup index as the store made it before: not unique.
	if _, err := files.ExecContext(ctx, fmt.Sprintf(`CREATE INDEX %q ON %q (_ferretdb_sjson->'$._id')`, deals+"_id_lookup", deals)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := db.RunCommand(ctx, bson.D{{Key: ReindexCommand, Value: 1}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	indexes := map[string]bool{}
	rows, err := files.QueryContext(ctx, `SELECT c.name, c.table_name, il.name, il."unique" FROM _ferretdb_collections c, pragma_index_list(c.table_name) il`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var coll, table, name string
		var unique bool
		if err := rows.Scan(&coll, &table, &name, &unique); err != nil {
			t.Fatal(err)
		}
		indexes[coll+"."+strings.TrimPrefix(name, table+"_")] = unique
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"deals.id_lookup": true, "contacts.id_lookup": true, "contacts.email": true}; !maps.Equal(indexes, want) {
		t.Fatalf("SQLite indexes (collection.name: unique) %v, want %v", indexes, want)
	}
	for _, coll := range []string{"deals", "contacts"} {
		if _, err := db.Collection(coll).InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}}); !mongo.IsDuplicateKeyError(err) {
			t.Fatalf("a second document of _id a in %s: %v, want a duplicate key error", coll, err)
		}
	}
	if _, err := db.Collection("contacts").InsertOne(ctx, bson.D{{Key: "_id", Value: "b"}, {Key: "email", Value: "a@x"}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("a second contact of one email: %v, want a duplicate key error", err)
	}
	var found bson.M
	if err := db.Collection("contacts").FindOne(ctx, bson.D{{Key: "stage", Value: "won"}}).Decode(&found); err != nil || found["_id"] != "a" {
		t.Fatalf("find by stage: %v %v", found, err)
	}
	specs, err := db.Collection("contacts").Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, spec := range specs {
		listed = append(listed, spec.Name)
	}
	if slices.Sort(listed); !slices.Equal(listed, []string{"_id_", "email", "stage"}) {
		t.Fatalf("listed indexes %v", listed)
	}
	if err := client.Database("none").RunCommand(ctx, bson.D{{Key: ReindexCommand, Value: 1}}).Err(); err == nil {
		t.Fatal("indexing a database the store does not have succeeded")
	}
	if _, err := os.Stat(filepath.Join(m.dir, "none.sqlite")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed command left a database file: %v", err)
	}
}
