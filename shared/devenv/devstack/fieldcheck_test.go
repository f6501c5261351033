package devstack

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A conditional write by _id matches through the proxy exactly the document FerretDB's own write
// matches: the proxy answers equalities and $exists of top-level fields from the document's row,
// and leaves the rest (operators, paths, arrays and objects, whose equality differs) to FerretDB.
func TestConditionalWritesCheckedFromTheRow(t *testing.T) {
	ctx := context.Background()
	m, colls := sideBySide(t, "checked")
	if _, err := colls[0].InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: int32(1)}, {Key: "n", Value: int64(5)}, {Key: "d", Value: 2.0}, {Key: "half", Value: 2.5},
			{Key: "project_id", Value: "p"}, {Key: "tags", Value: bson.A{"x", "y"}}, {Key: "z", Value: nil}, {Key: "o", Value: bson.D{{Key: "k", Value: 1}}}},
		bson.D{{Key: "_id", Value: `<a&"b">`}, {Key: "rev", Value: int32(3)}},
	}); err != nil {
		t.Fatal(err)
	}
	exists := func(b bool) bson.D { return bson.D{{Key: "$exists", Value: b}} }
	for _, c := range []struct {
		name   string
		filter bson.D
		// fromRow: the proxy answers it without FerretDB.
		fromRow bool
	}{
		{"the revision", bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: 1}}, true},
		{"another revision", bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: 2}}, true},
		{"the revision as a string", bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: "1"}}, true},
		{"a long", bson.D{{Key: "_id", Value: "a"}, {Key: "n", Value: int64(5)}}, true},
		{"a whole double", bson.D{{Key: "_id", Value: "a"}, {Key: "d", Value: 2}}, true},
		{"a fractional double", bson.D{{Key: "_id", Value: "a"}, {Key: "half", Value: 2}}, true},
		{"the project and live", bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "p"}, {Key: "deleted_at", Value: exists(false)}}, true},
		{"another project", bson.D{{Key: "_id", Value: "a"}, {Key: "project_id", Value: "P"}}, true},
		{"deleted", bson.D{{Key: "_id", Value: "a"}, {Key: "deleted_at", Value: exists(true)}}, true},
		{"a null is there", bson.D{{Key: "_id", Value: "a"}, {Key: "z", Value: exists(true)}}, true},
		{"a null is not absent", bson.D{{Key: "_id", Value: "a"}, {Key: "z", Value: exists(false)}}, true},
		{"a string against an array", bson.D{{Key: "_id", Value: "a"}, {Key: "tags", Value: "x"}}, false},
		{"a string against an object", bson.D{{Key: "_id", Value: "a"}, {Key: "o", Value: "k"}}, false},
		{"a path", bson.D{{Key: "_id", Value: "a"}, {Key: "o.k", Value: 1}}, false},
		{"an operator", bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}, false},
		{"a missing document", bson.D{{Key: "_id", Value: "missing"}, {Key: "rev", Value: 1}}, true},
		{"an _id JSON escapes", bson.D{{Key: "_id", Value: `<a&"b">`}, {Key: "rev", Value: 3}}, true},
	} {
		var matched [2]int64
		for i, coll := range colls {
			res, err := coll.UpdateOne(ctx, c.filter, bson.D{{Key: "$set", Value: bson.D{{Key: "touched", Value: true}}}})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			matched[i] = res.MatchedCount
		}
		if matched[0] != matched[1] {
			t.Errorf("%s: %d matched through the proxy, %d by FerretDB", c.name, matched[1], matched[0])
		}
		w, ok := byID(request(t, bson.D{{Key: "update", Value: "checked"},
			{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: c.filter}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "touched", Value: true}}}}}}}}}))
		if !ok {
			t.Fatalf("%s: not a write by _id", c.name)
		}
		w.db = "byid"
		got, err := m.proxy.fields.check(w)
		if fromRow := !errors.Is(err, errAskFerretDB); fromRow != c.fromRow || (fromRow && (err != nil || got != (matched[0] == 1))) {
			t.Errorf("%s: answered from the row %v (want %v): %v, %v", c.name, fromRow, c.fromRow, got, err)
		}
	}
	// A database dropped and made again under its name is another file: its checks read it.
	if err := colls[1].Database().Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := colls[1].InsertOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: int32(7)}}); err != nil {
		t.Fatal(err)
	}
	res, err := colls[1].UpdateOne(ctx, bson.D{{Key: "_id", Value: "a"}, {Key: "rev", Value: 7}}, bson.D{{Key: "$set", Value: bson.D{{Key: "touched", Value: true}}}})
	if err != nil || res.MatchedCount != 1 {
		t.Fatalf("the write of the database made again: %+v, %v", res, err)
	}
}
