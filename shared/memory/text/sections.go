package text

import "strings"

// sectionSep joins the headings of a section path.
const sectionSep = " › "

// mark is a heading found in the normalised text: it spans s[at:end] and opens the section
// whose heading path is path.
type mark struct {
	at, end int
	path    string
}

// headingMarks finds headings in s, the normalised text, in order: each where it starts a
// line after the previous one. A heading not found is skipped. Headings nest by Level: a
// heading closes the ones of its level or deeper before it.
func headingMarks(s string, headings []Heading) []mark {
	var (
		marks []mark
		open  []string
		level []int
		pos   int
	)
	for _, h := range headings {
		want := normalizeSpace(h.Text)
		at := lineStartIndex(s, pos, want)
		if want == "" || at < 0 {
			continue
		}
		for len(level) > 0 && level[len(level)-1] >= h.Level {
			open, level = open[:len(open)-1], level[:len(level)-1]
		}
		open, level = append(open, strings.ReplaceAll(want, "\n", " ")), append(level, h.Level)
		marks = append(marks, mark{at: at, end: at + len(want), path: strings.Join(open, sectionSep)})
		pos = at + len(want)
	}
	return marks
}

// lineStartIndex returns the first index at or after from where want starts a line of s and
// ends a word (the end of s, a space or a line break follows), or -1.
func lineStartIndex(s string, from int, want string) int {
	for from <= len(s) {
		i := strings.Index(s[from:], want)
		if i < 0 {
			return -1
		}
		at, end := from+i, from+i+len(want)
		if (at == 0 || s[at-1] == '\n') && (end == len(s) || s[end] == ' ' || s[end] == '\n') {
			return at
		}
		from = at + 1
	}
	return -1
}

// sectioner tells the section of consecutive pieces of the normalised text.
type sectioner struct {
	marks []mark
	next  int    // first mark not yet passed
	path  string // section in force
}

// at returns the section in force at the end of the piece s[start:end] of the normalised text:
// the path of the last heading that starts before end; heading tells that the piece holds
// nothing but headings. Pieces must be passed in order.
func (sc *sectioner) at(start, end int) (path string, heading bool) {
	covered := start // the piece is headings up to there
	for sc.next < len(sc.marks) && sc.marks[sc.next].at < end {
		m := sc.marks[sc.next]
		if m.at <= covered+1 {
			covered = max(covered, m.end)
		}
		sc.path = m.path
		sc.next++
	}
	return sc.path, covered >= end
}
