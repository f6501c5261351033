package agentruns

import (
	"testing"

	"github.com/agentplane/agentplane/shared/chats"
)

func TestMode(t *testing.T) {
	for _, tt := range []struct {
		mode, message, want string
	}{
		{"auto", "hello there", Standard},
		{"auto", "What is your refund policy?", Standard},
		{"auto", "Which deals are open?", Agent},
		{"auto", "Book a meeting with Ana next Tuesday", Agent},
		{"auto", "Is the calendar free on Friday?", Agent},
		{"auto", "First read the docs, then summarise them", Agent},
		{"auto", "Compare the two plans", Agent},
		{"auto", "Who? What? When?", Agent},
		{"standard", "Which deals are open?", Standard},
		{"agent", "hello", Agent},
	} {
		msg := tt.message
		if got := Mode(chats.Input{ReasoningMode: tt.mode, Message: &msg}); got != tt.want {
			t.Errorf("Mode(%s, %q) = %s, want %s", tt.mode, tt.message, got, tt.want)
		}
	}
}

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
