package text

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// isDroppedElement reports whether elements with atom a never hold readable
// text or are page chrome wherever they appear.
func isDroppedElement(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Svg, atom.Math,
		atom.Iframe, atom.Object, atom.Embed, atom.Canvas, atom.Nav, atom.Aside,
		atom.Form, atom.Button, atom.Select, atom.Input, atom.Textarea, atom.Dialog,
		atom.Audio, atom.Video, atom.Picture, atom.Map:
		return true
	}
	return false
}

// isSectioning reports whether atom a scopes a <header> or <footer> to
// itself; outside such elements a header is the page banner and a footer the
// page footer.
func isSectioning(a atom.Atom) bool {
	return a == atom.Article || a == atom.Main || a == atom.Section
}

// isChromeRole reports whether an ARIA role marks page chrome.
func isChromeRole(role string) bool {
	switch role {
	case "navigation", "banner", "contentinfo", "menu", "menubar", "search",
		"complementary", "dialog", "alertdialog":
		return true
	}
	return false
}

// boilerplateToken matches one id or class token that marks page chrome.
var boilerplateToken = regexp.MustCompile(`^(nav|navbar|navigation|menu|menubar|breadcrumbs?|sidebar|footer|cookie.*|consent.*|gdpr.*)$`)

// hiddenStyle matches inline styles that hide an element.
var hiddenStyle = regexp.MustCompile(`(?i)display\s*:\s*none|visibility\s*:\s*hidden`)

// removeBoilerplate deletes page chrome and non-text elements from doc.
func removeBoilerplate(doc *html.Node) {
	var drop []*html.Node
	var walk func(n *html.Node, inSection bool)
	walk = func(n *html.Node, inSection bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.CommentNode:
				drop = append(drop, c)
			case c.Type != html.ElementNode:
			case isBoilerplate(c, inSection):
				drop = append(drop, c)
			default:
				walk(c, inSection || isSectioning(c.DataAtom))
			}
		}
	}
	walk(doc, false)
	for _, n := range drop {
		n.Parent.RemoveChild(n)
	}
}

// isBoilerplate reports whether element n is page chrome or non-text.
func isBoilerplate(n *html.Node, inSection bool) bool {
	if n.Namespace != "" || isDroppedElement(n.DataAtom) {
		return true
	}
	switch n.DataAtom {
	case atom.Html, atom.Head, atom.Body, atom.Main, atom.Article:
		return false
	case atom.Header, atom.Footer:
		if !inSection {
			return true
		}
	}
	if _, hidden := attrValue(n, "hidden"); hidden ||
		strings.EqualFold(attr(n, "aria-hidden"), "true") ||
		hiddenStyle.MatchString(attr(n, "style")) {
		return true
	}
	switch role := strings.ToLower(strings.TrimSpace(attr(n, "role"))); {
	case role == "main":
		return false
	case isChromeRole(role):
		return true
	}
	return chromeByName(n) && !holdsMainContent(n)
}

// chromeByName reports whether n's id or class names it as a menu,
// navigation, breadcrumb, sidebar, footer or cookie notice.
func chromeByName(n *html.Node) bool {
	names := strings.ToLower(attr(n, "id") + " " + attr(n, "class"))
	tokens := strings.FieldsFunc(names, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	for _, t := range tokens {
		if boilerplateToken.MatchString(t) {
			return true
		}
	}
	return false
}

// holdsMainContent reports whether n contains the page's main content, in
// which case a misleading id or class must not remove it.
func holdsMainContent(n *html.Node) bool {
	for d := range n.Descendants() {
		if d.Type != html.ElementNode {
			continue
		}
		if d.DataAtom == atom.Main || d.DataAtom == atom.Article || attr(d, "role") == "main" {
			return true
		}
	}
	return false
}

// isBlock reports whether elements with atom a start and end a paragraph.
func isBlock(a atom.Atom) bool {
	switch a {
	case atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Body,
		atom.Caption, atom.Center, atom.Dd, atom.Details, atom.Div, atom.Dl, atom.Dt,
		atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.H1, atom.H2,
		atom.H3, atom.H4, atom.H5, atom.H6, atom.Header, atom.Hgroup, atom.Hr,
		atom.Legend, atom.Li, atom.Main, atom.Menu, atom.Ol, atom.P, atom.Pre,
		atom.Section, atom.Summary, atom.Table, atom.Ul:
		return true
	}
	return false
}

// textRenderer turns an HTML tree into paragraphs of plain text.
type textRenderer struct {
	paras    []string
	headings []Heading
	cur      strings.Builder // current paragraph; "\n" marks a line break
	cells    int             // cells written in the current table row
}

// renderText returns the text of n's subtree, paragraphs separated by blank
// lines.
func renderText(n *html.Node) string {
	text, _ := renderHeadings(n)
	return text
}

// renderHeadings returns the text of n's subtree, as renderText does, and its headings: the
// h1 to h6 elements.
func renderHeadings(n *html.Node) (string, []Heading) {
	var r textRenderer
	r.walk(n, false)
	r.flush()
	return strings.Join(r.paras, "\n\n"), r.headings
}

func (r *textRenderer) walk(n *html.Node, pre bool) {
	switch n.Type {
	case html.TextNode:
		if pre {
			r.cur.WriteString(n.Data)
		} else {
			r.cur.WriteString(strings.Map(lineBreakToSpace, n.Data))
		}
		return
	case html.ElementNode, html.DocumentNode:
	default:
		return
	}
	if n.Type == html.ElementNode {
		if n.Namespace != "" || isDroppedElement(n.DataAtom) {
			return
		}
		switch n.DataAtom {
		case atom.Br:
			r.cur.WriteByte('\n')
			return
		case atom.Tr:
			r.cur.WriteByte('\n')
			r.cells = 0
		case atom.Td, atom.Th:
			if r.cells > 0 {
				r.cur.WriteString(" | ")
			}
			r.cells++
		case atom.Pre:
			pre = true
		}
	}
	block := n.Type == html.ElementNode && isBlock(n.DataAtom)
	if block {
		r.flush()
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.walk(c, pre)
	}
	if block {
		paras := len(r.paras)
		r.flush()
		if level := headingLevel(n.DataAtom); level > 0 && len(r.paras) > paras {
			r.headings = append(r.headings, Heading{Level: level, Text: r.paras[paras]})
		}
	} else if n.DataAtom == atom.Tr {
		r.cur.WriteByte('\n')
	}
}

// headingLevel returns the level of a heading element, 0 for other elements.
func headingLevel(a atom.Atom) int {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

// lineBreakToSpace maps line breaks in ordinary HTML text to spaces, since
// "\n" marks explicit line breaks in the renderer.
func lineBreakToSpace(r rune) rune {
	if r == '\n' || r == '\r' {
		return ' '
	}
	return r
}

// flush ends the current paragraph, collapsing whitespace inside its lines
// and dropping empty lines.
func (r *textRenderer) flush() {
	var lines []string
	for line := range strings.SplitSeq(r.cur.String(), "\n") {
		if l := collapse(line); l != "" {
			lines = append(lines, l)
		}
	}
	r.cur.Reset()
	if len(lines) > 0 {
		r.paras = append(r.paras, strings.Join(lines, "\n"))
	}
}
