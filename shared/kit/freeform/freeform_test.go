package freeform_test

import (
	"encoding/json"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/freeform"
)

func TestJSONIsTheValueItself(t *testing.T) {
	var v struct {
		O freeform.Object `json:"o"`
		V freeform.Value  `json:"v"`
		N freeform.Value  `json:"n"`
	}
	in := `{"o":{"a.b":1},"v":{"$x":[1,"2"]},"n":null}`
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Fatalf("JSON %s, want %s", out, in)
	}
	if got := v.O.Size(); got != len(`{"a.b":1}`) {
		t.Fatalf("Size %d", got)
	}
}
