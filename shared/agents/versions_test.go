package agents_test

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/tools"
)

// numbers are the numbers of the agent's versions as Versions lists them, newest first.
func numbers(t *testing.T, s *agents.Service, b agents.Bot) []int {
	t.Helper()
	list, total, err := s.Versions(context.Background(), b, paging.Page{Page: 1, PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	out := []int{}
	for _, v := range list {
		out = append(out, v.Number)
	}
	if total != len(out) {
		t.Fatalf("total %d, listed %v", total, out)
	}
	return out
}

// A change written to the agent whose version never reached the store of versions (a crash
// between the two writes) is not lost: the newest is stored when the versions are read, and one
// the next change replaces is stored with it.
func TestVersionsMendAVersionTheStoreLacks(t *testing.T) {
	s, db := serviceOf(t)
	ctx := context.Background()
	b, err := s.Create(ctx, "p-1", "key-1", agents.Create{Name: "Bot", Model: "m", Instruction: "One."})
	if err != nil {
		t.Fatal(err)
	}
	forget := func(n int) {
		t.Helper()
		res, err := db.Collection("bot_versions").DeleteOne(ctx, bson.D{{Key: "version", Value: n}, {Key: "bot_id", Value: b.ID}})
		if err != nil || res.DeletedCount != 1 {
			t.Fatalf("forgetting version %d: %v %v", n, res, err)
		}
	}
	b, err = s.Update(ctx, "p-1", b.ID, "key-1", agents.Patch{Instruction: ptr("Two.")})
	if err != nil {
		t.Fatal(err)
	}
	forget(2)
	if got := numbers(t, s, b); len(got) != 2 || got[0] != 2 || got[1] != 1 {
		t.Fatalf("versions after the newest was lost %v", got)
	}
	forget(2)
	if b, err = s.Update(ctx, "p-1", b.ID, "key-2", agents.Patch{Instruction: ptr("Three.")}); err != nil {
		t.Fatal(err)
	}
	if got := numbers(t, s, b); len(got) != 3 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("versions after a change replaced a lost one %v", got)
	}
	v, err := s.Version(ctx, b, 2)
	if err != nil || v.Config.Instruction != "Two." || v.By != "key-1" {
		t.Fatalf("version 2 %+v (%v)", v, err)
	}
}

// An agent stored before versions were has version 1, its behaviour as it is, made when its
// versions are first read or it is first changed.
func TestVersionOneOfAnAgentStoredBeforeVersions(t *testing.T) {
	s, db := serviceOf(t)
	ctx := context.Background()
	old := func(t *testing.T) agents.Bot {
		t.Helper()
		b, err := s.Create(ctx, "p-1", "key-1", agents.Create{Name: "Old", Model: "m", Instruction: "As it was."})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Collection("bots").UpdateOne(ctx, bson.D{{Key: "_id", Value: b.ID}},
			bson.D{{Key: "$unset", Value: bson.D{{Key: "latest_version", Value: ""}, {Key: "version", Value: ""}, {Key: "published_version", Value: ""}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Collection("bot_versions").DeleteMany(ctx, bson.D{{Key: "bot_id", Value: b.ID}}); err != nil {
			t.Fatal(err)
		}
		if b, err = s.Get(ctx, "p-1", b.ID); err != nil || b.Latest != nil {
			t.Fatalf("old agent %+v (%v)", b, err)
		}
		if p := b.Public(); p.Version != 1 || p.PublishedVersion != 1 {
			t.Fatalf("old agent's versions %d %d", p.Version, p.PublishedVersion)
		}
		return b
	}
	t.Run("Read", func(t *testing.T) {
		b := old(t)
		if got := numbers(t, s, b); len(got) != 1 || got[0] != 1 {
			t.Fatalf("versions %v", got)
		}
		v, err := s.Version(ctx, b, 1)
		if err != nil || v.Config.Instruction != "As it was." {
			t.Fatalf("version 1 %+v (%v)", v, err)
		}
	})
	t.Run("Changed", func(t *testing.T) {
		b := old(t)
		b, err := s.Update(ctx, "p-1", b.ID, "key-2", agents.Patch{Instruction: ptr("Now.")})
		if err != nil || b.Version != 2 || b.PublishedVersion != 2 {
			t.Fatalf("changed %d/%d (%v)", b.Version, b.PublishedVersion, err)
		}
		first, err := s.Version(ctx, b, 1)
		if err != nil || first.Config.Instruction != "As it was." {
			t.Fatalf("version 1 %+v (%v)", first, err)
		}
		if got := numbers(t, s, b); len(got) != 2 {
			t.Fatalf("versions %v", got)
		}
	})
}

// A version's changes name each tool that differs, by its id: added (no old value), changed,
// removed (no new value); a tool written again alike (a new revision) is no change.
func TestDiffNamesEachToolChange(t *testing.T) {
	a := tools.State{ID: "a", Revision: "r1", Name: "Lookup", Type: tools.TypeHTTP}
	b := tools.State{ID: "b", Revision: "r1", Name: "Hook", Type: tools.TypeMCP}
	slower, again, renamed := a, a, a
	slower.Revision, slower.Settings.TimeoutSeconds = "r2", 9
	again.Revision = "r3"
	renamed.Revision, renamed.Name = "r4", "Orders"
	for _, tt := range []struct {
		name     string
		old, new []tools.State
		want     []string
	}{
		{"Added", []tools.State{a}, []tools.State{a, b}, []string{"tools.Hook", "", "Hook"}},
		{"Removed", []tools.State{a, b}, []tools.State{b}, []string{"tools.Lookup", "Lookup", ""}},
		{"Changed", []tools.State{a, b}, []tools.State{slower, b}, []string{"tools.Lookup", "Lookup", "Lookup"}},
		{"Renamed", []tools.State{a}, []tools.State{renamed}, []string{"tools.Orders", "Lookup", "Orders"}},
		{"WrittenAgainAlike", []tools.State{a}, []tools.State{again}, nil},
		{"FirstRecorded", nil, []tools.State{a}, []string{"tools.Lookup", "", "Lookup"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range agents.Diff(agents.Config{Tools: tt.old}, agents.Config{Tools: tt.new}) {
				name := func(v any) string {
					if s, ok := v.(tools.State); ok {
						return s.Name
					}
					return ""
				}
				got = append(got, c.Field, name(c.Old.V), name(c.New.V))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("changes %q, want %q", got, tt.want)
			}
		})
	}
}
