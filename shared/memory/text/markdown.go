package text

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// MarkdownText renders Markdown (CommonMark with the GitHub extensions) to
// plain text by walking goldmark's AST. Headings, paragraphs, list items,
// code blocks and tables become paragraphs separated by blank lines (code
// keeps its lines, table rows become lines with cells joined by " | "); link
// and image text is kept and their URLs dropped; emphasis and other markup
// is removed. A leading YAML front matter block is skipped.
func MarkdownText(src []byte) string {
	_, text, _ := renderMarkdown(src)
	return text
}

// renderMarkdown returns the first heading, the plain text and the headings of src.
func renderMarkdown(src []byte) (title, text string, headings []Heading) {
	src = stripFrontMatter(src)
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	doc := md.Parser().Parse(gmtext.NewReader(src))
	r := mdRenderer{src: src}
	r.block(doc)
	return r.title, strings.Join(r.paras, "\n\n"), r.headings
}

// stripFrontMatter removes a leading "---" ... "---" YAML block.
func stripFrontMatter(src []byte) []byte {
	rest, ok := bytes.CutPrefix(src, []byte("---\n"))
	if !ok {
		return src
	}
	if bytes.HasPrefix(rest, []byte("---\n")) {
		return rest[len("---\n"):]
	}
	if i := bytes.Index(rest, []byte("\n---\n")); i >= 0 {
		return rest[i+len("\n---\n"):]
	}
	return src
}

// mdRenderer collects the paragraphs of a goldmark document.
type mdRenderer struct {
	src      []byte
	paras    []string
	title    string
	headings []Heading
}

// add appends s as a paragraph: empty lines are dropped and the others
// trimmed, or, with collapseLines, also whitespace-collapsed.
func (r *mdRenderer) add(s string, collapseLines bool) {
	var lines []string
	for line := range strings.SplitSeq(s, "\n") {
		if collapseLines {
			line = collapse(line)
		} else {
			line = strings.TrimRight(line, " \t\r")
		}
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) > 0 {
		r.paras = append(r.paras, strings.Join(lines, "\n"))
	}
}

// block renders a block node and its children.
func (r *mdRenderer) block(n ast.Node) {
	switch n := n.(type) {
	case *ast.Heading:
		t := r.inline(n)
		if r.title == "" {
			r.title = collapse(t)
		}
		paras := len(r.paras)
		r.add(t, true)
		if len(r.paras) > paras {
			r.headings = append(r.headings, Heading{Level: n.Level, Text: r.paras[paras]})
		}
	case *ast.Paragraph, *ast.TextBlock:
		r.add(r.inline(n), true)
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		r.add(r.lines(n), false)
	case *ast.HTMLBlock:
		raw := r.lines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(r.src))
		}
		r.add(htmlFragmentText(raw), true)
	case *east.Table:
		var rows []string
		for row := n.FirstChild(); row != nil; row = row.NextSibling() {
			var cells []string
			for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
				cells = append(cells, collapse(r.inline(cell)))
			}
			rows = append(rows, strings.Join(cells, " | "))
		}
		r.add(strings.Join(rows, "\n"), true)
	default:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			r.block(c)
		}
	}
}

// lines returns the raw lines of a block such as a code block.
func (r *mdRenderer) lines(n ast.Node) string {
	var b strings.Builder
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// inline returns the text of the inline children of n; hard line breaks
// become "\n" and soft ones spaces.
func (r *mdRenderer) inline(n ast.Node) string {
	var b strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				v := c.Value(r.src)
				if !c.IsRaw() {
					v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
				}
				b.Write(v)
				switch {
				case c.HardLineBreak():
					b.WriteByte('\n')
				case c.SoftLineBreak():
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(c.Value)
			case *ast.AutoLink:
				b.Write(c.Label(r.src))
			case *ast.RawHTML, *east.TaskCheckBox:
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return b.String()
}

// htmlFragmentText returns the readable text of an HTML fragment embedded in
// Markdown.
func htmlFragmentText(raw string) string {
	doc, err := html.Parse(strings.NewReader(raw))
	if err != nil {
		return ""
	}
	removeBoilerplate(doc)
	return renderText(findElement(doc, atom.Body, doc))
}
