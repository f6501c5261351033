package index

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode"

	"golang.org/x/net/html"
)

// This file turns the documents shipped with the Go distribution into test
// passages. The splitter is deliberately simple and test-only: the production
// chunker lives in its own package.

// maxPassage is the size, in bytes, above which consecutive paragraphs are
// not merged into one passage.
const maxPassage = 1600

// passage is one test chunk with its text kept for judging answers.
type passage struct {
	ID   string
	Text string
}

// paragraph is a block of text; a heading starts a new passage.
type paragraph struct {
	text    string
	heading bool
}

// goDocs lists the Go distribution documents used as the real corpus.
var goDocs = []string{"go_spec.html", "go_mem.html", "godebug.md", "asm.html"}

// goroot returns the GOROOT of the go command running the tests.
var goroot = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	return strings.TrimSpace(string(out)), err
})

// loadGoDocs reads goDocs from GOROOT and splits them into passages.
func loadGoDocs(tb testing.TB) []passage {
	tb.Helper()
	root, err := goroot()
	if err != nil {
		tb.Fatalf("go env GOROOT: %v", err)
	}
	var out []passage
	for _, name := range goDocs {
		raw, err := os.ReadFile(filepath.Join(root, "doc", name))
		if err != nil {
			tb.Fatalf("reading the Go corpus: %v", err)
		}
		var paras []paragraph
		if strings.HasSuffix(name, ".md") {
			paras = markdownParagraphs(string(raw))
		} else if paras, err = htmlParagraphs(string(raw)); err != nil {
			tb.Fatalf("parsing %s: %v", name, err)
		}
		prefix := strings.TrimSuffix(strings.TrimSuffix(name, ".html"), ".md")
		for i, text := range group(paras, maxPassage) {
			out = append(out, passage{ID: fmt.Sprintf("%s-%03d", prefix, i), Text: text})
		}
	}
	return out
}

// blockElements end the current paragraph when opened or closed.
var blockElements = map[string]bool{
	"address": true, "article": true, "blockquote": true, "dd": true, "div": true, "dl": true,
	"dt": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"header": true, "hr": true, "li": true, "ol": true, "p": true, "pre": true,
	"section": true, "table": true, "tr": true, "ul": true, "br": true,
}

// htmlParagraphs returns the text of the block elements of an HTML document.
func htmlParagraphs(doc string) ([]paragraph, error) {
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return nil, err
	}
	var (
		paras   []paragraph
		cur     strings.Builder
		heading bool
	)
	flush := func() {
		if text := strings.TrimSpace(cur.String()); text != "" {
			paras = append(paras, paragraph{text: text, heading: heading})
		}
		cur.Reset()
		heading = false
	}
	var walk func(n *html.Node, pre bool)
	walk = func(n *html.Node, pre bool) {
		switch n.Type {
		case html.TextNode:
			if pre {
				cur.WriteString(n.Data)
				return
			}
			space := func() {
				if s := cur.String(); s != "" && s[len(s)-1] != ' ' {
					cur.WriteByte(' ')
				}
			}
			for i, field := range strings.FieldsFunc(n.Data, unicode.IsSpace) {
				if i > 0 || n.Data != strings.TrimLeftFunc(n.Data, unicode.IsSpace) {
					space()
				}
				cur.WriteString(field)
			}
			if n.Data != strings.TrimRightFunc(n.Data, unicode.IsSpace) {
				space()
			}
			return
		case html.CommentNode:
			return
		case html.ElementNode:
			switch n.Data {
			case "script", "style", "head":
				return
			case "td", "th":
				cur.WriteByte(' ')
			}
		}
		block := n.Type == html.ElementNode && blockElements[n.Data]
		if block {
			flush()
			heading = len(n.Data) == 2 && n.Data[0] == 'h' && n.Data[1] >= '1' && n.Data[1] <= '6'
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, pre || n.Type == html.ElementNode && n.Data == "pre")
		}
		if block {
			flush()
		}
	}
	walk(root, false)
	flush()
	return paras, nil
}

var (
	frontMatter = regexp.MustCompile(`(?s)\A---\n.*?\n---\n`)
	mdComment   = regexp.MustCompile(`(?s)<!--.*?-->`)
	mdLink      = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	mdAnchor    = regexp.MustCompile(`\s*\{#[^}]*\}`)
)

// markdownParagraphs returns the blank-line separated blocks of a Markdown
// document, with front matter, comments, link targets and heading anchors
// removed.
func markdownParagraphs(doc string) []paragraph {
	doc = frontMatter.ReplaceAllString(doc, "")
	doc = mdComment.ReplaceAllString(doc, "")
	doc = mdLink.ReplaceAllString(doc, "$1")
	doc = mdAnchor.ReplaceAllString(doc, "")
	var paras []paragraph
	for block := range strings.SplitSeq(doc, "\n\n") {
		if text := strings.TrimSpace(block); text != "" {
			paras = append(paras, paragraph{
				text:    strings.TrimLeft(text, "# "),
				heading: strings.HasPrefix(text, "#"),
			})
		}
	}
	return paras
}

// group packs consecutive paragraphs into passages of at most limit bytes,
// starting a new passage at each heading. A paragraph longer than limit is cut
// at line or word boundaries.
func group(paras []paragraph, limit int) []string {
	var (
		out []string
		cur strings.Builder
	)
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	body := false // cur holds more than headings
	for _, p := range paras {
		if p.heading && body {
			flush()
			body = false
		}
		body = body || !p.heading
		for _, piece := range cut(p.text, limit) {
			if cur.Len() > 0 && cur.Len()+2+len(piece) > limit {
				flush()
			}
			if cur.Len() > 0 {
				cur.WriteString("\n\n")
			}
			cur.WriteString(piece)
		}
	}
	flush()
	return out
}

// cut splits text into pieces of at most limit bytes, preferring to cut after
// a newline, else after a space.
func cut(text string, limit int) []string {
	var pieces []string
	for len(text) > limit {
		at := strings.LastIndexByte(text[:limit], '\n')
		if at <= 0 {
			at = strings.LastIndexByte(text[:limit], ' ')
		}
		if at <= 0 {
			at = limit
		}
		pieces = append(pieces, strings.TrimSpace(text[:at]))
		text = strings.TrimSpace(text[at:])
	}
	return append(pieces, text)
}
