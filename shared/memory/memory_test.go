package memory_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/memory"
)

func TestChunkID(t *testing.T) {
	ref := memory.ChunkRef{SourceID: "6b0291d0d0377522ac8e2024", Gen: "019a-7f3e-uuid-v7", Position: 417}
	got, ok := memory.ParseChunkID(ref.ID())
	if !ok || got != ref {
		t.Fatalf("ParseChunkID(%q) = %+v, %v", ref.ID(), got, ok)
	}
	for _, bad := range []string{"", "nodash", "-gen-1", "src--1", "src-gen-x", "src-1"} {
		if _, ok := memory.ParseChunkID(bad); ok {
			t.Errorf("ParseChunkID(%q) accepted", bad)
		}
	}
}
