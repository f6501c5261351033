package outbox_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/outbox"
)

type inner struct {
	Name  string `json:"name"`
	Count int    `json:"count,string"`
}

type base struct {
	ID    string `json:"id"`
	Shown string `json:"shown"`
}

type node struct {
	Value string `json:"value"`
	Next  *node  `json:"next"`
}

type thing struct {
	base
	Shown   int               `json:"shown"` // hides base's
	Title   string            `json:"title"`
	Secret  string            `json:"-"`
	Untag   bool              // encoded under its Go name
	hidden  string            // unexported: not encoded
	When    time.Time         `json:"when"`
	Inner   *inner            `json:"inner,omitempty"`
	Items   []inner           `json:"items"`
	Tags    []string          `json:"tags"`
	Meta    map[string]string `json:"meta"`
	Free    any               `json:"free"`
	Raw     json.RawMessage   `json:"raw"`
	Bytes   []byte            `json:"bytes"`
	Node    node              `json:"node"`
	Ignored func()            `json:"-"`
}

var things = outbox.Declare[thing]("test.thing")

// The fields of a declared type are those encoding/json writes: json names, "-" left out,
// embedded fields promoted and hidden by the outer ones, arrays of objects under index 0,
// free-form values (maps, any, raw JSON) and recursive types open below themselves.
func TestDeclaredFields(t *testing.T) {
	got, ok := outbox.Fields("test.thing")
	want := []string{"data.Untag", "data.bytes", "data.free", "data.free.*", "data.id", "data.inner", "data.inner.count", "data.inner.name",
		"data.items", "data.items.0.count", "data.items.0.name", "data.meta", "data.meta.*", "data.node", "data.node.next", "data.node.next.*",
		"data.node.value", "data.raw", "data.raw.*", "data.shown", "data.tags", "data.title", "data.when"}
	if !ok || !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	ev := things.New(context.Background(), "test.thing", "p", "b", thing{Items: []inner{{}}})
	var data map[string]any
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	for key := range data {
		if !slices.Contains(got, "data."+key) {
			t.Errorf("the event carries %s, not among its fields", key)
		}
	}
	if _, ok := outbox.Fields("test.undeclared"); ok {
		t.Fatal("an undeclared type has fields")
	}
}

func TestResolve(t *testing.T) {
	for _, tt := range []struct {
		path   string
		ok     bool
		at     string
		fields []string
	}{
		{"bot_id", true, "", nil},
		{"cause.0", true, "", nil},
		{"data.items.3.name", true, "", nil},
		{"data.meta.any.thing", true, "", nil},
		{"data.node.next.value.deeper", true, "", nil},
		{"deal", false, "", []string{"bot_id", "cause", "data", "id", "occurred_at", "omitted", "project_id", "type"}},
		{"data.secret", false, "data", []string{"Untag", "bytes", "free", "id", "inner", "items", "meta", "node", "raw", "shown", "tags", "title", "when"}},
		{"data.inner.nope", false, "data.inner", []string{"count", "name"}},
		{"data.items.first", false, "data.items", []string{"0"}},
		{"data.title.x", false, "data.title", nil},
	} {
		ok, at, fields := outbox.Resolve("test.thing", tt.path)
		if ok != tt.ok || at != tt.at || !slices.Equal(fields, tt.fields) {
			t.Errorf("%s: %v %q %v, want %v %q %v", tt.path, ok, at, fields, tt.ok, tt.at, tt.fields)
		}
	}
	if ok, _, _ := outbox.Resolve("test.undeclared", "data.anything"); !ok {
		t.Error("a path of an undeclared type does not resolve")
	}
}

// Kind.New builds only the events of its types.
func TestKindNewRefusesOtherTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	things.New(context.Background(), outbox.DealWon, "p", "b", thing{})
}
