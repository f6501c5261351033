package chats

import (
	"regexp"
	"strings"
)

// Reasoning types a request is answered with.
const (
	ModeStandard = "standard"
	ModeAgent    = "agent"
)

var (
	// acting are requests a tool serves: the CRM, the calendar, workflows.
	acting = regexp.MustCompile(`(?i)\b(deals?|pipeline|crm|leads?|prospects?|book|booking|appointments?|meetings?|schedule|availab\w*|calendar|free slots?|workflows?)\b`)
	// stepwise are requests of several steps.
	stepwise = regexp.MustCompile(`(?i)\b(and then|after that|afterwards|step by step|first\b.*\bthen|compare|research|investigate|find out)\b`)
)

// Mode is the reasoning type that answers in: the one it asks for, or for auto the rules'
// choice: agent when the message asks about deals, meetings, the calendar or workflows (what
// tools serve), or asks for several steps ("first ... then", "and then", "compare",
// "research"), or asks three or more questions; standard otherwise (greetings, one question).
func Mode(in Input) string {
	switch in.ReasoningMode {
	case ModeStandard, ModeAgent:
		return in.ReasoningMode
	}
	if in.Message == nil {
		return ModeStandard
	}
	msg := *in.Message
	if acting.MatchString(msg) || stepwise.MatchString(msg) || strings.Count(msg, "?") >= 3 {
		return ModeAgent
	}
	return ModeStandard
}
