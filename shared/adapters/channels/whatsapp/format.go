package whatsapp

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

// markdown parses the agent's text: CommonMark with GitHub's extensions (strikethrough, tables,
// task lists, bare links).
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// format turns Markdown into WhatsApp's own formatting: bold is *b*, italic _i_, strikethrough
// ~s~, inline code `c`, code blocks fenced with ```, headings bold lines, links "title (url)",
// lists "- " and "1. ", quotes "> ", table rows cells joined by " | ". A line break the agent
// wrote stays a line break.
func format(md string) string {
	src := []byte(md)
	w := writer{src: src}
	return strings.TrimSpace(w.container(markdown.Parser().Parse(text.NewReader(src)), "\n\n"))
}

// writer renders a parsed document of src.
type writer struct {
	src []byte
	// plain drops emphasis marks (inside a heading, which is bold as a whole).
	plain bool
}

// container renders the blocks under n, joined by sep.
func (w *writer) container(n ast.Node, sep string) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := w.block(c); strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

// block renders one block.
func (w *writer) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Heading:
		w.plain = true
		s := strings.TrimSpace(w.inline(n))
		w.plain = false
		return "*" + s + "*"
	case *ast.Paragraph, *ast.TextBlock:
		return w.inline(n)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return "```\n" + strings.TrimRight(w.lines(n), "\n") + "\n```"
	case *ast.HTMLBlock:
		raw := w.lines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(w.src))
		}
		return strings.TrimRight(raw, "\n")
	case *ast.Blockquote:
		return prefixLines(w.container(n, "\n\n"), "> ", "> ")
	case *ast.List:
		return w.list(n)
	case *ast.ThematicBreak:
		return "———"
	case *east.Table:
		var rows []string
		for row := n.FirstChild(); row != nil; row = row.NextSibling() {
			var cells []string
			for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
				cells = append(cells, strings.TrimSpace(w.inline(cell)))
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
		return strings.Join(rows, "\n")
	default:
		return w.container(n, "\n\n")
	}
}

// list renders a list's items, "- " or numbered, their further lines indented under the
// marker.
func (w *writer) list(l *ast.List) string {
	sep := "\n\n"
	if l.IsTight {
		sep = "\n"
	}
	var items []string
	number := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "- "
		if l.IsOrdered() {
			marker = strconv.Itoa(number) + ". "
			number++
		}
		items = append(items, prefixLines(w.container(item, sep), marker, strings.Repeat(" ", len(marker))))
	}
	return strings.Join(items, sep)
}

// lines is the raw text of a block (a code block's lines).
func (w *writer) lines(n ast.Node) string {
	var b strings.Builder
	segs := n.Lines()
	for i := range segs.Len() {
		seg := segs.At(i)
		b.Write(seg.Value(w.src))
	}
	return b.String()
}

// inline renders the inline children of n.
func (w *writer) inline(n ast.Node) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.inlineNode(&b, c)
	}
	return b.String()
}

func (w *writer) inlineNode(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(w.src)
		if !n.IsRaw() {
			v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
		}
		b.Write(v)
		if n.SoftLineBreak() || n.HardLineBreak() {
			b.WriteByte('\n')
		}
	case *ast.String:
		b.Write(n.Value)
	case *ast.CodeSpan:
		b.WriteString("`" + w.inline(n) + "`")
	case *ast.Emphasis:
		m := "_"
		if n.Level == 2 {
			m = "*"
		}
		b.WriteString(w.mark(m, w.inline(n)))
	case *east.Strikethrough:
		b.WriteString(w.mark("~", w.inline(n)))
	case *ast.Link:
		b.WriteString(titled(w.inline(n), string(n.Destination)))
	case *ast.Image:
		b.WriteString(titled(w.inline(n), string(n.Destination)))
	case *ast.AutoLink:
		b.Write(n.Label(w.src))
	case *ast.RawHTML:
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			b.Write(seg.Value(w.src))
		}
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("[x] ")
		} else {
			b.WriteString("[ ] ")
		}
	default:
		b.WriteString(w.inline(n))
	}
}

// mark wraps s in WhatsApp's mark m, unless the writer is plain or s is blank.
func (w *writer) mark(m, s string) string {
	if w.plain || strings.TrimSpace(s) == "" {
		return s
	}
	return m + s + m
}

// titled is a link as WhatsApp shows it: "title (url)", or the url alone when it has no title of
// its own.
func titled(title, url string) string {
	title = strings.TrimSpace(title)
	if title == "" || title == url {
		return url
	}
	return title + " (" + url + ")"
}

// prefixLines puts first before s's first line and rest before each further non-empty line.
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
