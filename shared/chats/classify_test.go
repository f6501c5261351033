package chats

import (
	"testing"
)

func TestMode(t *testing.T) {
	for _, tt := range []struct {
		mode, message, want string
	}{
		{"auto", "hello there", ModeStandard},
		{"auto", "What is your refund policy?", ModeStandard},
		{"auto", "Which deals are open?", ModeAgent},
		{"auto", "Book a meeting with Ana next Tuesday", ModeAgent},
		{"auto", "Is the calendar free on Friday?", ModeAgent},
		{"auto", "First read the docs, then summarise them", ModeAgent},
		{"auto", "Compare the two plans", ModeAgent},
		{"auto", "Who? What? When?", ModeAgent},
		{"standard", "Which deals are open?", ModeStandard},
		{"agent", "hello", ModeAgent},
	} {
		msg := tt.message
		if got := Mode(Input{ReasoningMode: tt.mode, Message: &msg}); got != tt.want {
			t.Errorf("Mode(%s, %q) = %s, want %s", tt.mode, tt.message, got, tt.want)
		}
	}
}
