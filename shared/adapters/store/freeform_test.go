package store

import (
	"bytes"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// unmarshal decodes raw with the store's registry.
func unmarshal(raw bson.Raw, out any) error {
	dec := bson.NewDecoder(bson.NewDocumentReader(bytes.NewReader(raw)))
	dec.SetRegistry(registry)
	return dec.Decode(out)
}

type doc struct {
	Object freeform.Object   `bson:"object"`
	List   []freeform.Object `bson:"list"`
	Value  freeform.Value    `bson:"value"`
}

// keys are object keys the store refuses or misreads as document keys.
var keys = map[string]any{
	"a.b": 1.0, "$where": "x", "a$b": true, "": "empty", "ключ.ü": "unicode", "日本語": nil,
	"nested": map[string]any{"x.y": []any{map[string]any{"$gt": 1.5}}, "": map[string]any{}},
}

func TestFreeformRoundTripThroughBSON(t *testing.T) {
	in := doc{Object: keys, List: []freeform.Object{keys, {}}, Value: freeform.Value{V: []any{keys, "s", 2.0, nil}}}
	raw, err := marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out doc
	if err := unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", out, in)
	}
}

func TestFreeformScalarValuesRoundTrip(t *testing.T) {
	for _, v := range []any{nil, "1", 1.0, true, "", []any{}} {
		raw, err := marshal(doc{Value: freeform.Value{V: v}})
		if err != nil {
			t.Fatal(err)
		}
		var out doc
		if err := unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out.Value.V, v) {
			t.Fatalf("%#v came back as %#v", v, out.Value.V)
		}
	}
}

// TestFreeformReadsValuesStoredAsBSON reads what was stored before free-form values were JSON text:
// BSON documents, arrays and scalars, as plain JSON values.
func TestFreeformReadsValuesStoredAsBSON(t *testing.T) {
	raw, err := bson.Marshal(bson.D{
		{Key: "object", Value: bson.D{{Key: "n", Value: int32(3)}, {Key: "in", Value: bson.D{{Key: "a", Value: bson.A{"x", 1.5, int64(7)}}}}}},
		{Key: "list", Value: bson.A{bson.D{{Key: "url", Value: "https://x"}}}},
		{Key: "value", Value: "won"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out doc
	if err := unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	want := doc{
		Object: freeform.Object{"n": 3.0, "in": map[string]any{"a": []any{"x", 1.5, 7.0}}},
		List:   []freeform.Object{{"url": "https://x"}},
		Value:  freeform.Value{V: "won"},
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("legacy read:\n got %#v\nwant %#v", out, want)
	}
}
