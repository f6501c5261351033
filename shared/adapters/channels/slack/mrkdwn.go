package slack

import (
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// gfm reads the agent's Markdown as GitHub writes it (strikethrough, tables, task lists, bare
// links).
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

// escaper escapes what Slack reads as markup of its own (links, mentions) in text.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// mrkdwn is Markdown written in Slack's mrkdwn: bold *x*, italic _x_, strike ~x~, links
// <url|text>, headings as bold lines, list items after "•" or their number, code kept, and &, <,
// > escaped so that Slack shows them.
func mrkdwn(markdown string) string {
	src := []byte(markdown)
	doc := gfm.Parser().Parse(text.NewReader(src))
	return strings.TrimSpace(blocks(doc, src, "\n\n"))
}

// blocks renders n's children, blocks, one after the other with sep between them.
func blocks(n ast.Node, src []byte, sep string) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if s := block(c, src); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

func block(n ast.Node, src []byte) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return inlines(n, src)
	case *ast.Heading:
		return "*" + inlines(n, src) + "*"
	case *ast.ThematicBreak:
		return "———"
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		return "```\n" + escaper.Replace(strings.TrimRight(lines(n, src), "\n")) + "\n```"
	case *ast.HTMLBlock:
		return escaper.Replace(strings.TrimRight(lines(n, src), "\n"))
	case *ast.Blockquote:
		return prefixLines(blocks(n, src, "\n\n"), "> ", "> ")
	case *ast.List:
		return list(n, src)
	case *east.Table:
		var rows []string
		for row := n.FirstChild(); row != nil; row = row.NextSibling() {
			var cells []string
			for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
				cells = append(cells, inlines(cell, src))
			}
			line := strings.Join(cells, " | ")
			if row.Kind() == east.KindTableHeader {
				line = "*" + line + "*"
			}
			rows = append(rows, line)
		}
		return strings.Join(rows, "\n")
	default:
		return blocks(n, src, "\n\n")
	}
}

// list renders a list's items after "•" (or their number), the lines of an item past its first
// indented under it, a loose list's items apart.
func list(l *ast.List, src []byte) string {
	sep := "\n"
	if !l.IsTight {
		sep = "\n\n"
	}
	var items []string
	number := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "• "
		if l.IsOrdered() {
			marker = strconv.Itoa(number) + ". "
			number++
		}
		items = append(items, prefixLines(blocks(item, src, "\n"), marker, "    "))
	}
	return strings.Join(items, sep)
}

// prefixLines puts first before s's first line and rest before each of the others.
func prefixLines(s, first, rest string) string {
	ls := strings.Split(s, "\n")
	for i := range ls {
		if i == 0 {
			ls[i] = first + ls[i]
		} else {
			ls[i] = rest + ls[i]
		}
	}
	return strings.Join(ls, "\n")
}

// lines is the raw text of a code or HTML block.
func lines(n ast.Node, src []byte) string {
	var b strings.Builder
	segs := n.Lines()
	for i := range segs.Len() {
		seg := segs.At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// inlines renders n's inline children.
func inlines(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.WriteString(inline(c, src))
	}
	return b.String()
}

func inline(n ast.Node, src []byte) string {
	switch n := n.(type) {
	case *ast.Text:
		s := escaper.Replace(string(n.Segment.Value(src)))
		if n.SoftLineBreak() || n.HardLineBreak() {
			s += "\n"
		}
		return s
	case *ast.String:
		return escaper.Replace(string(n.Value))
	case *ast.CodeSpan:
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b.Write(t.Segment.Value(src))
			}
		}
		return "`" + escaper.Replace(b.String()) + "`"
	case *ast.Emphasis:
		mark := "_"
		if n.Level == 2 {
			mark = "*"
		}
		return mark + inlines(n, src) + mark
	case *east.Strikethrough:
		return "~" + inlines(n, src) + "~"
	case *ast.Link:
		return link(string(n.Destination), inlines(n, src))
	case *ast.Image:
		return link(string(n.Destination), inlines(n, src))
	case *ast.AutoLink:
		url := string(n.URL(src))
		if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(url, "mailto:") {
			return link("mailto:"+url, escaper.Replace(url))
		}
		return link(url, "")
	case *ast.RawHTML:
		var b strings.Builder
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			b.Write(seg.Value(src))
		}
		return escaper.Replace(b.String())
	case *east.TaskCheckBox:
		if n.IsChecked {
			return "☑ "
		}
		return "☐ "
	default:
		return inlines(n, src)
	}
}

// urlEscaper keeps a URL from ending Slack's <url|text> early.
var urlEscaper = strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C")

// link is Slack's <url|label>, or <url> when the label is empty or the URL itself.
func link(url, label string) string {
	url = urlEscaper.Replace(url)
	if label == "" || label == url {
		return "<" + url + ">"
	}
	return "<" + url + "|" + strings.ReplaceAll(label, "|", "¦") + ">"
}
