package outbox_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/outbox"
)

// An event's data stays under MaxData whatever the resource holds: the largest fields are left
// out, largest first, and named, and the small ones consumers match on stay.
func TestEventDataIsBounded(t *testing.T) {
	big := strings.Repeat("x", outbox.MaxData)
	tests := []struct {
		name    string
		data    map[string]any
		omitted []string
	}{
		{"small", map[string]any{"uuid": "u1", "text": "short"}, nil},
		{"one large field", map[string]any{"uuid": "u1", "text": big}, []string{"text"}},
		{"two large fields", map[string]any{"uuid": "u1", "text": big, "integrations": []string{big, big}, "status": 1}, []string{"integrations", "text"}},
		{"many fields just over", map[string]any{"uuid": "u1", "a": big[:outbox.MaxData/2], "b": big[:outbox.MaxData/2-100], "c": big[:200]}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := outbox.New(context.Background(), outbox.BotUpdated, "p", "b", tt.data)
			if len(ev.Data) > outbox.MaxData || !slices.Equal(ev.Omitted, tt.omitted) {
				t.Fatalf("data of %d bytes omitting %v, want at most %d omitting %v", len(ev.Data), ev.Omitted, outbox.MaxData, tt.omitted)
			}
			var got map[string]any
			if err := json.Unmarshal(ev.Data, &got); err != nil {
				t.Fatal(err)
			}
			if got["uuid"] != "u1" {
				t.Fatalf("data %v lost the id", got)
			}
			for _, name := range tt.omitted {
				if _, ok := got[name]; ok {
					t.Fatalf("omitted field %q still in the data", name)
				}
			}
		})
	}
}
