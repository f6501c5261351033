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

func TestPassageHeading(t *testing.T) {
	tests := []struct {
		name                  string
		source, page, section string
		want                  string
	}{
		{"source, page and section", "Go docs", "The Go Memory Model", "The Go Memory Model › Locks", "Go docs › The Go Memory Model › Locks"},
		{"page titled as the source", "Kettle manual", "Kettle manual", "Kettle manual › Descaling", "Kettle manual › Descaling"},
		{"section alone", "tar", "", "OPTIONS › --verify", "tar › OPTIONS › --verify"},
		{"no section", "Opening hours", "", "", "Opening hours"},
		{"nothing", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := memory.Passage{Source: memory.Ref{Title: tt.source}, PageTitle: tt.page, Section: tt.section}
			if got := p.Heading(); got != tt.want {
				t.Errorf("Heading() = %q, want %q", got, tt.want)
			}
		})
	}
}
