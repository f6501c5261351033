package text

import (
	"strings"
	"unicode"
)

// Heading is a heading of a document: a line of Page.Text, or the start of one, that names the
// section below it, or a few lines (a numbered question of a FAQ).
type Heading struct {
	// Level is the depth of the heading: 1 for the outermost (an h1, a "#" heading, a man page's
	// section), larger for the sections nested in it.
	Level int
	// Text is the heading as it appears in Page.Text, its lines whitespace-collapsed.
	Text string
}

// Bounds of what plainHeadings takes for a heading.
const (
	maxHeadingRunes = 80 // a heading line, or a definition's term
	maxHeadingLines = 3  // a heading of several lines (a long numbered question)
)

// plainHeadings finds the headings of plain text laid out as man pages, FAQs and other
// references are, where indentation carries the structure (text as plainText returns it:
// lines right-trimmed, indentation kept). A heading is a line after a blank line or another
// heading that is
//
//   - written in capitals ("DESCRIPTION", "SEE ALSO");
//   - short, not ending with punctuation, and followed at once by more indented text: a
//     subsection's title or a definition's term ("   Operation modifiers", "-c, --create");
//   - a definition's term followed on its line, after two spaces or more, by the start of a
//     description whose next lines are indented to it ("     Match   Restricts the ...");
//   - a numbered item or a question, of at most three lines, less indented than the paragraph
//     after it (" 15. I have a question about ...").
//
// Levels follow indentation: a heading nests in the headings before it that are less
// indented.
func plainHeadings(s string) []Heading {
	lines := strings.Split(strings.ReplaceAll(s, "\t", "        "), "\n")
	var (
		out    []Heading
		open   []int // indentation of the headings the current line nests in
		isHead = make([]bool, len(lines))
	)
	for i := 0; i < len(lines); i++ {
		if blank(lines[i]) || i > 0 && !blank(lines[i-1]) && !isHead[i-1] {
			continue
		}
		ind := indentOf(lines[i])
		text, n, ok := headingAt(lines, i, ind)
		if !ok {
			continue
		}
		for len(open) > 0 && open[len(open)-1] >= ind {
			open = open[:len(open)-1]
		}
		open = append(open, ind)
		out = append(out, Heading{Level: len(open), Text: text})
		for k := i; k < i+n; k++ {
			isHead[k] = true
		}
		i += max(n, 1) - 1
	}
	return out
}

// headingAt returns the heading that starts at lines[i], indented by ind, and the number of
// whole lines it takes (0 for a term followed on its line by its description, which is no
// heading line); ok is false when lines[i] starts no heading.
func headingAt(lines []string, i, ind int) (text string, n int, ok bool) {
	if text, n, ok = question(lines, i, ind); ok {
		return text, n, true
	}
	next := -1 // indentation of the following line, -1 when it is blank or absent
	if i+1 < len(lines) && !blank(lines[i+1]) {
		next = indentOf(lines[i+1])
	}
	if term, col, ok := inlineTerm(lines[i], ind); ok && next == col {
		return term, 0, true
	}
	line := strings.TrimSpace(lines[i])
	switch {
	case capitals(line) && short(line),
		next > ind && short(line) && !strings.ContainsAny(line[len(line)-1:], ".,:;") && !bulleted(line):
		return collapse(line), 1, true
	}
	return "", 0, false
}

// question returns the numbered item or question of at most maxHeadingLines lines that starts
// at lines[i], indented by ind, when a blank line and a more indented paragraph follow it.
func question(lines []string, i, ind int) (text string, n int, ok bool) {
	line := strings.TrimSpace(lines[i])
	end := i + 1
	for end < len(lines) && !blank(lines[end]) && indentOf(lines[end]) > ind {
		end++
	}
	last := strings.TrimSpace(lines[end-1])
	if end-i > maxHeadingLines || end >= len(lines) || !blank(lines[end]) ||
		!numbered(line) && !strings.HasSuffix(last, "?") {
		return "", 0, false
	}
	after := end
	for after < len(lines) && blank(lines[after]) {
		after++
	}
	if after == len(lines) || indentOf(lines[after]) <= ind {
		return "", 0, false
	}
	parts := make([]string, 0, end-i)
	for _, l := range lines[i:end] {
		parts = append(parts, collapse(l))
	}
	return strings.Join(parts, "\n"), end - i, true
}

// inlineTerm splits a definition's line "term   description" where two spaces or more follow
// a short term: it returns the term and the column the description starts at.
func inlineTerm(line string, ind int) (term string, col int, ok bool) {
	gap := strings.Index(line[ind:], "  ")
	if gap <= 0 {
		return "", 0, false
	}
	term = line[ind : ind+gap]
	rest := line[ind+gap:]
	col = ind + gap + indentOf(rest)
	return term, col, col < len(line) && short(term)
}

// numbered reports whether line starts with a number followed by "." or ")" and a space.
func numbered(line string) bool {
	digits := len(line) - len(strings.TrimLeft(line, "0123456789"))
	return digits > 0 && digits+1 < len(line) && (line[digits] == '.' || line[digits] == ')') && line[digits+1] == ' '
}

// bulleted reports whether line is a list item: a bullet followed by a space.
func bulleted(line string) bool {
	for _, b := range []string{"• ", "* ", "- ", "+ ", "· ", "o "} {
		if strings.HasPrefix(line, b) {
			return true
		}
	}
	return false
}

// capitals reports whether line has letters, at least two, and none of them lower-case.
func capitals(line string) bool {
	letters := 0
	for _, r := range line {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return letters >= 2
}

// short reports whether line is short enough to be a heading or a term.
func short(line string) bool { return len([]rune(line)) <= maxHeadingRunes }

func blank(line string) bool { return strings.TrimSpace(line) == "" }

// indentOf returns the number of leading spaces of line.
func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }
