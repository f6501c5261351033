package chats

import (
	"slices"
	"testing"
)

func TestVerdict(t *testing.T) {
	for msg, want := range map[string]string{
		"yes": Accept, "Yes, please!": Accept, "ok": Accept, "go ahead": Accept, "Looks good, thanks": Accept, "LGTM": Accept,
		"no": Reject, "No, cancel that": Reject, "stop": Reject, "never mind": Reject, "don't do it": Reject,
		"yes but also email them": Revise, "add a step to call Ana": Revise, "make it shorter": Revise,
	} {
		if got := Verdict(msg); got != want {
			t.Errorf("Verdict(%q) = %s, want %s", msg, got, want)
		}
	}
}

func TestSteps(t *testing.T) {
	got := Steps("Here is the plan:\n1. Look up Acme.\n2) Book a call.\n\n3. Send a summary.\nThanks")
	if want := []string{"Look up Acme.", "Book a call.", "Send a summary."}; !slices.Equal(got, want) {
		t.Fatalf("Steps = %q, want %q", got, want)
	}
	var long string
	for i := range 12 {
		long += string(rune('1'+i%9)) + ". step\n"
	}
	if n := len(Steps(long)); n != MaxPlanSteps {
		t.Fatalf("%d steps kept, want %d", n, MaxPlanSteps)
	}
}

func TestEditTarget(t *testing.T) {
	earlier := []Message{{Role: RoleUser, Content: "write it"}, {Role: RoleAgent, Content: "Here:\n```py\nprint(1)\n```"}}
	for _, tt := range []struct {
		name, message     string
		earlier           []Message
		target, lang, ask string
	}{
		{"block in the message", "Fix this:\n```go\nx := 1\n```\nplease", nil, "x := 1", "go", "Fix this:\n\nplease"},
		{"block of the previous reply", "use 2", earlier, "print(1)", "py", "use 2"},
		{"whole previous reply", "shorter", []Message{{Role: RoleAgent, Content: "A long answer."}}, "A long answer.", "", "shorter"},
		{"nothing", "fix it", []Message{{Role: RoleUser, Content: "hi"}}, "", "", "fix it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			target, lang, ask := editTarget(tt.message, tt.earlier)
			if target != tt.target || lang != tt.lang || ask != tt.ask {
				t.Fatalf("got %q %q %q, want %q %q %q", target, lang, ask, tt.target, tt.lang, tt.ask)
			}
		})
	}
	if got := unfence("```go\nx := 2\n```"); got != "x := 2" {
		t.Fatalf("unfence = %q", got)
	}
	if got := unfence("x := 2"); got != "x := 2" {
		t.Fatalf("unfence = %q", got)
	}
}
