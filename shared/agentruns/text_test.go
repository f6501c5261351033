package agentruns

import "testing"

func TestParseText(t *testing.T) {
	for _, tt := range []struct {
		name, content        string
		thought, tool, input string
		answer               string
	}{
		{"action", "Thought: I need the deals.\nAction: list_deals\nAction Input: {\"status\":\"open\"}", "I need the deals.", "list_deals", `{"status":"open"}`, ""},
		{"action without input", "Action: list_deals", "", "list_deals", "{}", ""},
		{"final answer", "Thought: done.\nFinal Answer: There are two deals.", "done.", "", "", "There are two deals."},
		{"plain text", "There are two deals.", "", "", "", "There are two deals."},
		{"multi-line input", "Action: create_deal\nAction Input: {\n  \"title\": \"Acme\"\n}", "", "create_deal", "{\n  \"title\": \"Acme\"\n}", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := parseText(tt.content, 3)
			if tt.tool == "" {
				if got.call != nil || got.answer != tt.answer {
					t.Fatalf("got %+v, want the answer %q", got, tt.answer)
				}
				return
			}
			if got.call == nil || got.call.Name != tt.tool || got.call.Arguments != tt.input || got.thought != tt.thought || got.call.ID != "text_3" {
				t.Fatalf("got %+v (call %+v), want %s(%s) after %q", got, got.call, tt.tool, tt.input, tt.thought)
			}
		})
	}
}
