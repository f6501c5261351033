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
		{"auto", "What AVAILABILITY do you have?", ModeAgent},
		{"auto", "Any free slots tomorrow?", ModeAgent},
		{"auto", "Explain it step by step", ModeAgent},
		{"auto", "Explain it step by step.", ModeAgent},
		{"auto", "Check the order and then email me", ModeAgent},
		{"auto", "Can you find out why?", ModeAgent},
		{"auto", "first\nthe docs, then a summary", ModeAgent},
		{"auto", "Then, first, the docs", ModeStandard},
		{"auto", "Is this step by", ModeStandard},
		{"auto", "Is the slot free?", ModeStandard},
		{"auto", "Where are the bookshelves?", ModeStandard},
		{"auto", "Who? What?", ModeStandard},
		{"standard", "Which deals are open?", ModeStandard},
		{"agent", "hello", ModeAgent},
	} {
		msg := tt.message
		if got := Mode(Input{ReasoningMode: tt.mode, Message: &msg}); got != tt.want {
			t.Errorf("Mode(%s, %q) = %s, want %s", tt.mode, tt.message, got, tt.want)
		}
	}
}
