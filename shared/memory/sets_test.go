package memory_test

import (
	"slices"
	"testing"

	"github.com/agentplane/agentplane/shared/memory"
)

// A set is its ids whatever their order and repeats: the same ids give the same digest, a change
// adds and removes ids, Clear empties it first, and Changed names what differs both ways.
func TestSetsAreTheirIDs(t *testing.T) {
	ab, ba := memory.NewSet([]string{"a", "b", "a"}), memory.NewSet([]string{"b", "a"})
	if ab.SetRef != ba.SetRef || ab.Count != 2 || ab.Digest == memory.NewSet(nil).Digest {
		t.Fatalf("sets of a and b: %+v, %+v", ab.SetRef, ba.SetRef)
	}
	if memory.NewSet(nil).Digest != memory.SetDigest(nil) {
		t.Fatal("the empty set's digest is not SetDigest(nil)")
	}
	for _, tt := range []struct {
		name string
		c    memory.SetChange
		want []string
	}{
		{"Add", memory.SetChange{Add: []string{"c"}}, []string{"a", "b", "c"}},
		{"AddPresent", memory.SetChange{Add: []string{"a"}}, []string{"a", "b"}},
		{"Remove", memory.SetChange{Remove: []string{"a"}}, []string{"b"}},
		{"RemoveAbsent", memory.SetChange{Remove: []string{"z"}}, []string{"a", "b"}},
		{"Clear", memory.SetChange{Clear: true}, nil},
		{"ClearThenAdd", memory.SetChange{Clear: true, Add: []string{"d"}}, []string{"d"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ab.With(tt.c)
			if !slices.Equal(got.IDs(), tt.want) || got.Digest != memory.NewSet(tt.want).Digest || got.Count != len(tt.want) {
				t.Fatalf("%+v: %v %+v, want %v", tt.c, got.IDs(), got.SetRef, tt.want)
			}
		})
	}
	added, removed := memory.Changed(ab, memory.NewSet([]string{"b", "c", "d"}))
	if !slices.Equal(added, []string{"c", "d"}) || !slices.Equal(removed, []string{"a"}) {
		t.Fatalf("changed: added %v removed %v", added, removed)
	}
	if within := ab.Within(func(id string) bool { return id == "b" }); !slices.Equal(within.IDs(), []string{"b"}) || !within.Has("b") || within.Has("a") {
		t.Fatalf("within %v", within.IDs())
	}
}
