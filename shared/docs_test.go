package shared_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The documentation's pages, from the module's root: what the docs test reads.
func docPages(t *testing.T) []string {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md", "../deploy/README.md"}, pages...)
}

var (
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	headingTag = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// prose returns the lines of a Markdown text outside fenced code blocks, inline code removed,
// each with its line number.
func prose(text string) map[int]string {
	lines := map[int]string{}
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines[i+1] = l
		}
	}
	return lines
}

// anchors returns the fragments GitHub gives a page's headings: the heading's text lowercased,
// without inline markup and punctuation, spaces turned to hyphens, a repeated one suffixed -1, -2...
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(text) {
		m := headingTag.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		h := mdLink.ReplaceAllStringFunc(m[2], func(s string) string { return s[strings.Index(s, "[")+1 : strings.Index(s, "]")] })
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// Every relative link of the README and docs/ reaches a file that exists and, when it names a
// heading (#fragment) of a Markdown page, a heading that page has.
func TestDocsLinks(t *testing.T) {
	checked := 0
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for n, l := range prose(string(text)) {
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				where := fmt.Sprintf("%s:%d: link %s", strings.TrimPrefix(page, "../"), n, target)
				to, err := os.ReadFile(path)
				if err != nil {
					if info, serr := os.Stat(path); serr == nil && info.IsDir() && frag == "" {
						continue
					}
					t.Errorf("%s: no file %s", where, strings.TrimPrefix(path, "../"))
					continue
				}
				if frag != "" && strings.HasSuffix(path, ".md") && !anchors(string(to))[frag] {
					t.Errorf("%s: %s has no heading #%s", where, strings.TrimPrefix(path, "../"), frag)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("%d relative links checked: the link pattern no longer finds the pages' links", checked)
	}
	t.Logf("%d relative links checked", checked)
}

// The slugs anchors gives are GitHub's for the kinds of heading the pages have.
func TestDocsAnchors(t *testing.T) {
	got := anchors("# agentplane\n## Using OpenAI's clients\n## Calls, one of each\n```\n# not a heading\n```\n## Layout\n## Layout\n### `AGENTPLANE_QUEUE` and [the dashboard](x.md)\n")
	for _, want := range []string{"agentplane", "using-openais-clients", "calls-one-of-each", "layout", "layout-1", "agentplane_queue-and-the-dashboard"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block made an anchor: %v", got)
	}
}
