package chats

import (
	"slices"
	"strings"
	"unicode"
)

// Reasoning types a request is answered with.
const (
	ModeStandard = "standard"
	ModeAgent    = "agent"
)

var (
	// acting are the words of requests a tool serves: the CRM, the calendar, workflows (and any
	// word that begins with "availab").
	acting = words("deal", "deals", "pipeline", "crm", "lead", "leads", "prospect", "prospects", "book", "booking",
		"appointment", "appointments", "meeting", "meetings", "schedule", "calendar", "workflow", "workflows")
	// stepwise are the words of requests of several steps (so is "first" followed anywhere by
	// "then").
	stepwise = words("afterwards", "compare", "research", "investigate")
	// phrases are words in a row that ask for a tool or for several steps.
	phrases = [][]string{{"free", "slot"}, {"free", "slots"}, {"and", "then"}, {"after", "that"}, {"step", "by", "step"}, {"find", "out"}}
)

// words is the set of ws.
func words(ws ...string) map[string]bool {
	set := make(map[string]bool, len(ws))
	for _, w := range ws {
		set[w] = true
	}
	return set
}

// Mode is the reasoning type that answers in: the one it asks for, or for auto the rules'
// choice: agent when the message asks about deals, meetings, the calendar or workflows (what
// tools serve), or asks for several steps ("first ... then", "and then", "compare",
// "research"), or asks three or more questions; standard otherwise (greetings, one question).
// The rules read the message's words (letters, digits and underscores, in any case), whatever
// separates them.
func Mode(in Input) string {
	switch in.ReasoningMode {
	case ModeStandard, ModeAgent:
		return in.ReasoningMode
	}
	if in.Message == nil {
		return ModeStandard
	}
	msg := *in.Message
	if strings.Count(msg, "?") >= 3 || needsAgent(msg) {
		return ModeAgent
	}
	return ModeStandard
}

// needsAgent reports whether msg asks for what a tool serves or for several steps.
func needsAgent(msg string) bool {
	ws := strings.FieldsFunc(strings.ToLower(msg), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
	first := false
	for i, w := range ws {
		if acting[w] || stepwise[w] || strings.HasPrefix(w, "availab") || (first && w == "then") {
			return true
		}
		for _, p := range phrases {
			if len(ws)-i >= len(p) && slices.Equal(ws[i:i+len(p)], p) {
				return true
			}
		}
		first = first || w == "first"
	}
	return false
}
