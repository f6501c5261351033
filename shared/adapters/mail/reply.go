package mail

import (
	"regexp"
	"strings"
)

// The lines that begin the quoted earlier message of a reply.
var (
	// attribution is the line a mail client writes above the quote, a date in it: "On <date>,
	// <name> wrote:" (Gmail, Apple Mail, Thunderbird) and its French, German, Spanish, Dutch
	// and Italian forms ("Am <date> schrieb <name>:").
	attribution = regexp.MustCompile(`(?i)^(on|le|am|el|op|il)\s.*\d.*\s(wrote|a écrit|schrieb|escribió|schreef|ha scritto)(\s.*)?:\s*$`)
	// original is Outlook's and others' separator above a forwarded or quoted message.
	original = regexp.MustCompile(`(?i)^-{2,}\s*(original message|forwarded message|ursprüngliche nachricht|message d'origine)\s*-{2,}$`)
	// headerFrom and headerSent are the first lines of Outlook's header block of the quote:
	// "From: ...", then "Sent: ..." (or "Date: ...") within the next lines.
	headerFrom = regexp.MustCompile(`(?i)^\*?(from|von|de)\s*:\*?\s`)
	headerSent = regexp.MustCompile(`(?i)^\*?(sent|date|gesendet|envoyé|enviado)\s*:\*?\s`)
	// rule is a line of underscores or dashes some clients draw above the quote.
	rule = regexp.MustCompile(`^\s*(_{5,}|-{5,})\s*$`)
)

// NewText is the new part of a reply's text: what is above the quoted earlier message (an
// "On ... wrote:" line, lines quoted with ">", "-----Original Message-----", Outlook's "From:
// ... Sent: ..." block), trimmed. A text with nothing above its quote (a reply written between
// the quoted lines) is returned whole, trimmed.
func NewText(text string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	cut := quoteStart(lines)
	for cut > 0 && (strings.TrimSpace(lines[cut-1]) == "" || rule.MatchString(lines[cut-1])) {
		cut--
	}
	if cut == 0 {
		return strings.TrimSpace(text)
	}
	return strings.TrimSpace(strings.Join(lines[:cut], "\n"))
}

// quoteStart is the index of the line where the quoted message begins; len(lines) when none
// does.
func quoteStart(lines []string) int {
	for i, line := range lines {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, ">"), attribution.MatchString(l), original.MatchString(l):
			return i
		case wrappedAttribution(lines[i:]):
			return i
		case headerFrom.MatchString(l) && sentFollows(lines[i+1:]):
			return i
		}
	}
	return len(lines)
}

// wrappedAttribution reports whether lines begin with an attribution a client wrapped over
// two or three lines.
func wrappedAttribution(lines []string) bool {
	for n := 2; n <= min(3, len(lines)); n++ {
		if attribution.MatchString(strings.Join(lines[:n], " ")) {
			return true
		}
	}
	return false
}

// sentFollows reports whether one of the next three lines is the Sent (or Date) line of a
// header block.
func sentFollows(next []string) bool {
	for _, line := range next[:min(3, len(next))] {
		if headerSent.MatchString(strings.TrimSpace(line)) {
			return true
		}
	}
	return false
}
