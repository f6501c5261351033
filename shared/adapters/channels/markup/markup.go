// Package markup writes the agent's Markdown in a messaging platform's lightweight markup
// (Slack's mrkdwn, WhatsApp's formatting): one walk over goldmark's reading of the Markdown,
// the marks, links, bullets and escaping of each platform given by a Style.
package markup

import (
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Style is what a platform's markup makes of Markdown.
type Style struct {
	// Bold, Italic and Strike are the marks put on both sides of bold, italic and struck text.
	Bold, Italic, Strike string
	// Bullet is put before an item of an unordered list.
	Bullet string
	// Indent is put before an item's lines past its first; "" lines them up under the item's text.
	Indent string
	// Checked and Unchecked begin the item of a task list.
	Checked, Unchecked string
	// BoldTableHeader writes a table's header row bold.
	BoldTableHeader bool
	// Escape, if not nil, escapes text (code included) that the platform would read as markup.
	Escape func(string) string
	// Link writes a link to url labelled label (label already written in the style); label is ""
	// for a bare URL, and a bare e-mail address is its own label.
	Link func(url, label string) string
}

// gfm reads Markdown as GitHub writes it (strikethrough, tables, task lists, bare links).
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

// Render writes markdown in s: headings as bold lines, lists after s.Bullet or their number,
// quotes after "> ", table rows as cells joined by " | ", code kept in backticks, a line break
// the agent wrote kept.
func Render(markdown string, s Style) string {
	src := []byte(markdown)
	w := writer{src: src, style: s}
	return strings.TrimSpace(w.blocks(gfm.Parser().Parse(text.NewReader(src)), "\n\n"))
}

// writer renders a parsed document of src in style.
type writer struct {
	src   []byte
	style Style
	// plain drops emphasis marks (inside a heading, which is bold as a whole).
	plain bool
}

// blocks renders the blocks under n, joined by sep.
func (w *writer) blocks(n ast.Node, sep string) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := w.block(c); strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

func (w *writer) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Heading:
		w.plain = true
		s := strings.TrimSpace(w.inlines(n))
		w.plain = false
		return w.style.Bold + s + w.style.Bold
	case *ast.Paragraph, *ast.TextBlock:
		return w.inlines(n)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return "```\n" + w.escape(strings.TrimRight(w.lines(n), "\n")) + "\n```"
	case *ast.HTMLBlock:
		raw := w.lines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(w.src))
		}
		return w.escape(strings.TrimRight(raw, "\n"))
	case *ast.Blockquote:
		return prefixLines(w.blocks(n, "\n\n"), "> ", "> ")
	case *ast.List:
		return w.list(n)
	case *ast.ThematicBreak:
		return "———"
	case *east.Table:
		var rows []string
		for row := n.FirstChild(); row != nil; row = row.NextSibling() {
			var cells []string
			for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
				cells = append(cells, strings.TrimSpace(w.inlines(cell)))
			}
			line := strings.Join(cells, " | ")
			if w.style.BoldTableHeader && row.Kind() == east.KindTableHeader {
				line = w.style.Bold + line + w.style.Bold
			}
			rows = append(rows, line)
		}
		return strings.Join(rows, "\n")
	default:
		return w.blocks(n, "\n\n")
	}
}

// list renders a list's items after the bullet or their number, an item's further lines
// indented, a loose list's items and their blocks apart.
func (w *writer) list(l *ast.List) string {
	sep := "\n\n"
	if l.IsTight {
		sep = "\n"
	}
	var items []string
	number := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := w.style.Bullet
		if l.IsOrdered() {
			marker = strconv.Itoa(number) + ". "
			number++
		}
		indent := w.style.Indent
		if indent == "" {
			indent = strings.Repeat(" ", len([]rune(marker)))
		}
		items = append(items, prefixLines(w.blocks(item, sep), marker, indent))
	}
	return strings.Join(items, sep)
}

// lines is the raw text of a code or HTML block.
func (w *writer) lines(n ast.Node) string {
	var b strings.Builder
	segs := n.Lines()
	for i := range segs.Len() {
		seg := segs.At(i)
		b.Write(seg.Value(w.src))
	}
	return b.String()
}

// inlines renders the inline children of n.
func (w *writer) inlines(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.WriteString(w.inline(c))
	}
	return b.String()
}

func (w *writer) inline(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(w.src)
		if !n.IsRaw() {
			v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
		}
		s := w.escape(string(v))
		if n.SoftLineBreak() || n.HardLineBreak() {
			s += "\n"
		}
		return s
	case *ast.String:
		return w.escape(string(n.Value))
	case *ast.CodeSpan:
		return "`" + w.inlines(n) + "`"
	case *ast.Emphasis:
		if n.Level == 2 {
			return w.mark(w.style.Bold, w.inlines(n))
		}
		return w.mark(w.style.Italic, w.inlines(n))
	case *east.Strikethrough:
		return w.mark(w.style.Strike, w.inlines(n))
	case *ast.Link:
		return w.style.Link(string(n.Destination), w.inlines(n))
	case *ast.Image:
		return w.style.Link(string(n.Destination), w.inlines(n))
	case *ast.AutoLink:
		if n.AutoLinkType == ast.AutoLinkEmail {
			return w.style.Link(string(n.URL(w.src)), w.escape(string(n.Label(w.src))))
		}
		return w.style.Link(string(n.URL(w.src)), "")
	case *ast.RawHTML:
		var b strings.Builder
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			b.Write(seg.Value(w.src))
		}
		return w.escape(b.String())
	case *east.TaskCheckBox:
		if n.IsChecked {
			return w.style.Checked
		}
		return w.style.Unchecked
	default:
		return w.inlines(n)
	}
}

// mark wraps s in m, unless the writer is plain or s is blank.
func (w *writer) mark(m, s string) string {
	if w.plain || strings.TrimSpace(s) == "" {
		return s
	}
	return m + s + m
}

// escape is s escaped by the style, if it escapes.
func (w *writer) escape(s string) string {
	if w.style.Escape == nil {
		return s
	}
	return w.style.Escape(s)
}

// prefixLines puts first before s's first line and rest before each further non-empty line;
// an empty line gets rest's marks without its spaces (">" inside a quote).
func prefixLines(s, first, rest string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		switch {
		case i == 0:
			lines[i] = first + line
		case line != "":
			lines[i] = rest + line
		case strings.TrimSpace(rest) != "":
			lines[i] = strings.TrimSpace(rest)
		}
	}
	return strings.Join(lines, "\n")
}
