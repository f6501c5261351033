package telegram

import (
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/agentplane/agentplane/shared/channels"
)

// MaxText is the most a Telegram message holds: 4,096 characters of its text after its HTML
// is parsed (counted here in UTF-16 code units, as Telegram counts its entities).
const MaxText = 4096

var (
	md = goldmark.New(goldmark.WithExtensions(extension.Strikethrough))
	// escaper escapes what Telegram's HTML parse mode reads as markup.
	escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	// linkSchemes are the URL schemes a link keeps; others are shown as their text.
	linkSchemes = []string{"http://", "https://", "tg://", "mailto:"}
)

// Format converts Markdown to the messages of Telegram's HTML parse mode that carry it: bold,
// italic, strikethrough, code, preformatted blocks (with their language), links, quotes;
// headings in bold, list items with bullets or numbers. The messages are cut between
// top-level blocks, each of at most MaxText characters; a block longer than that alone goes as
// plain text in pieces (code kept preformatted). Empty text is no message.
func Format(markdown string) []string {
	src := []byte(markdown)
	doc := md.Parser().Parse(text.NewReader(src))
	var out []string
	var cur strings.Builder
	size := 0
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
		}
		cur.Reset()
		size = 0
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		w := &writer{src: src}
		w.block(n, 0)
		block := strings.TrimSpace(w.html.String())
		if block == "" {
			continue
		}
		if w.size > MaxText {
			flush()
			out = append(out, plainPieces(n, src)...)
			continue
		}
		if size > 0 && size+2+w.size > MaxText {
			flush()
		}
		if size > 0 {
			cur.WriteString("\n\n")
			size += 2
		}
		cur.WriteString(block)
		size += w.size
	}
	flush()
	return out
}

// plainPieces is a block too long for one message as its text in pieces that each fit one,
// preformatted when it is code.
func plainPieces(n ast.Node, src []byte) []string {
	w := &writer{src: src, plain: true}
	w.block(n, 0)
	_, code := n.(*ast.FencedCodeBlock)
	if _, ok := n.(*ast.CodeBlock); ok {
		code = true
	}
	var out []string
	for limit := MaxText; ; limit = limit * 3 / 4 {
		out = out[:0]
		fits := true
		for _, p := range channels.Split(w.html.String(), limit) {
			fits = fits && units(p) <= MaxText
			if code {
				out = append(out, "<pre>"+escaper.Replace(p)+"</pre>")
			} else {
				out = append(out, escaper.Replace(p))
			}
		}
		if fits {
			return out
		}
	}
}

// writer renders Markdown nodes as Telegram's HTML, counting the text it shows; plain writes
// the text alone, unescaped.
type writer struct {
	src     []byte
	plain   bool
	html    strings.Builder
	size    int
	inQuote bool
}

// tag writes markup, which Telegram does not count.
func (w *writer) tag(s string) {
	if !w.plain {
		w.html.WriteString(s)
	}
}

// text writes text to show.
func (w *writer) text(s string) {
	w.size += units(s)
	if w.plain {
		w.html.WriteString(s)
		return
	}
	w.html.WriteString(escaper.Replace(s))
}

// block writes a block node; depth is how deep in lists it is.
func (w *writer) block(n ast.Node, depth int) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		w.inlines(n)
	case *ast.Heading:
		w.tag("<b>")
		w.inlines(n)
		w.tag("</b>")
	case *ast.ThematicBreak:
		w.text("———")
	case *ast.FencedCodeBlock:
		if lang := string(n.Language(w.src)); lang != "" {
			w.tag(`<pre><code class="language-` + escaper.Replace(lang) + `">`)
			w.lines(n.Lines())
			w.tag("</code></pre>")
			return
		}
		w.tag("<pre>")
		w.lines(n.Lines())
		w.tag("</pre>")
	case *ast.CodeBlock:
		w.tag("<pre>")
		w.lines(n.Lines())
		w.tag("</pre>")
	case *ast.HTMLBlock:
		w.lines(n.Lines())
		if n.HasClosure() {
			w.text(string(n.ClosureLine.Value(w.src)))
		}
	case *ast.Blockquote:
		if w.inQuote {
			w.blocks(n, depth, "\n")
			return
		}
		w.inQuote = true
		w.tag("<blockquote>")
		w.blocks(n, depth, "\n")
		w.tag("</blockquote>")
		w.inQuote = false
	case *ast.List:
		i := 0
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			if i > 0 {
				w.text("\n")
			}
			marker := "• "
			if n.IsOrdered() {
				marker = strconv.Itoa(n.Start+i) + ". "
			}
			w.text(strings.Repeat("   ", depth) + marker)
			w.blocks(item, depth+1, "\n")
			i++
		}
	default:
		w.blocks(n, depth, "\n\n")
	}
}

// blocks writes n's children as blocks, sep between them.
func (w *writer) blocks(n ast.Node, depth int, sep string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c != n.FirstChild() {
			w.text(sep)
		}
		w.block(c, depth)
	}
}

// lines writes a block's lines as they are, without its last line break.
func (w *writer) lines(lines *text.Segments) {
	var b strings.Builder
	for i := range lines.Len() {
		seg := lines.At(i)
		b.Write(seg.Value(w.src))
	}
	w.text(strings.TrimRight(b.String(), "\n"))
}

// inlines writes n's inline children.
func (w *writer) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		w.inline(c)
	}
}

func (w *writer) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		w.text(string(n.Segment.Value(w.src)))
		if n.SoftLineBreak() || n.HardLineBreak() {
			w.text("\n")
		}
	case *ast.String:
		w.text(string(n.Value))
	case *ast.CodeSpan:
		w.tag("<code>")
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				w.text(string(t.Segment.Value(w.src)))
			}
		}
		w.tag("</code>")
	case *ast.Emphasis:
		tag := "i"
		if n.Level >= 2 {
			tag = "b"
		}
		w.tag("<" + tag + ">")
		w.inlines(n)
		w.tag("</" + tag + ">")
	case *east.Strikethrough:
		w.tag("<s>")
		w.inlines(n)
		w.tag("</s>")
	case *ast.Link:
		w.link(string(n.Destination), n, "")
	case *ast.Image:
		w.link(string(n.Destination), n, string(n.Destination))
	case *ast.AutoLink:
		u := string(n.URL(w.src))
		if n.AutoLinkType == ast.AutoLinkEmail {
			w.text(u)
			return
		}
		w.link(u, nil, u)
	case *ast.RawHTML:
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			w.text(string(seg.Value(w.src)))
		}
	default:
		w.inlines(n)
	}
}

// link writes a link to dest showing n's children, or alt when it has none; a link to a
// scheme Telegram does not open shows its text alone.
func (w *writer) link(dest string, n ast.Node, alt string) {
	ok := false
	for _, s := range linkSchemes {
		ok = ok || strings.HasPrefix(strings.ToLower(dest), s)
	}
	if ok {
		w.tag(`<a href="` + escaper.Replace(dest) + `">`)
	}
	if n != nil && n.HasChildren() {
		w.inlines(n)
	} else {
		w.text(alt)
	}
	if ok {
		w.tag("</a>")
	}
}

// escape is text escaped for Telegram's HTML.
func escape(s string) string { return escaper.Replace(s) }

// units is s's length in UTF-16 code units.
func units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
