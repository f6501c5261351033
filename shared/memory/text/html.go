package text

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/go-shiori/go-readability"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
)

const (
	// minReadableRunes is the smallest main-content text, in characters,
	// for which readability's result is trusted.
	minReadableRunes = 250
	// readableShare is the inverse of the smallest share of the cleaned body
	// text that readability's result must keep to be trusted; below it the
	// article is probably a fragment of a page with several sections.
	readableShare = 3
)

// Page is the readable content of a document.
type Page struct {
	// Title is, for HTML, the <title>, else og:title, else the first <h1>,
	// trimmed and whitespace-collapsed; for Markdown the first heading; for
	// PDF the Title metadata.
	Title string
	// Favicon is, for HTML, the absolute URL of the page's icon (<link
	// rel="icon">, "shortcut icon" or "apple-touch-icon"), else the site's
	// /favicon.ico; empty for inline content without a resolvable icon link.
	Favicon string
	// Text is the readable text: paragraphs separated by blank lines,
	// headings and list items as their own paragraphs. It has no script,
	// style or other non-text content and, for HTML, no navigation menus,
	// page headers or footers, asides, forms or cookie banners.
	Text string
	// Headings are the headings of Text, in order: for HTML its h1 to h6 elements, for
	// Markdown its headings, for plain text the lines its layout marks as headings (see
	// plainHeadings); none for PDF.
	Headings []Heading
	// Links holds, for HTML, the absolute http(s) URLs of the document's
	// <a href> elements, taken from the whole document (menus included),
	// fragments stripped, deduplicated, in document order.
	Links []string
}

// ExtractHTML extracts the readable content of an HTML document fetched from
// pageURL. pageURL is nil for inline content: then relative links that a
// <base href> cannot resolve are dropped and there is no /favicon.ico
// default.
//
// The body is decoded to UTF-8 according to a byte order mark, else the
// charset of contentType, else <meta charset> in the first 1024 bytes; a
// body that is valid UTF-8 is only read as windows-1252 (the fallback) when
// contentType says so. Boilerplate is removed first: nav, header and footer
// (outside article, main and section), aside, form, script, style, noscript,
// template, svg, iframe and similar elements, hidden elements, elements with
// a navigation, banner, contentinfo or dialog role and elements whose id or
// class marks them as a menu, navigation, breadcrumb, sidebar, footer or
// cookie notice. go-readability then looks for the main article; its text is
// used when it has at least 250 characters and a third of the cleaned body
// text, otherwise the whole cleaned body is used. Title, Favicon and Links
// are always taken from the whole, uncleaned document.
func ExtractHTML(body []byte, contentType string, pageURL *url.URL) (Page, error) {
	doc, err := parseHTML(body, contentType)
	if err != nil {
		return Page{}, err
	}
	base := documentBase(doc, pageURL)
	page := Page{
		Title:   htmlTitle(doc),
		Favicon: favicon(doc, base, pageURL),
		Links:   links(doc, base),
	}
	removeBoilerplate(doc)
	page.Text, page.Headings = mainText(doc, pageURL)
	return page, nil
}

// parseHTML decodes body to UTF-8 and parses it.
func parseHTML(body []byte, contentType string) (*html.Node, error) {
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	if !certain && name == "windows-1252" && utf8.Valid(body) {
		// Either nothing was declared (windows-1252 is the fallback) or the
		// declaration contradicts content that is valid UTF-8; valid UTF-8
		// with non-ASCII bytes is very unlikely to be windows-1252.
		enc = encoding.Nop
	}
	if enc != encoding.Nop {
		decoded, err := enc.NewDecoder().Bytes(body)
		if err != nil {
			return nil, fmt.Errorf("decode %s html: %w", name, err)
		}
		body = decoded
	}
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse html: %w", err)
	}
	return doc, nil
}

// mainText returns the readable text of a cleaned document: readability's
// article when it is trustworthy, else the whole body.
func mainText(doc *html.Node, pageURL *url.URL) (string, []Heading) {
	bodyText, bodyHeadings := renderHeadings(findElement(doc, atom.Body, doc))
	article, ok := readableArticle(doc, pageURL)
	if !ok {
		return bodyText, bodyHeadings
	}
	articleText, articleHeadings := renderHeadings(article)
	n := utf8.RuneCountInString(articleText)
	if n < minReadableRunes || n*readableShare < utf8.RuneCountInString(bodyText) {
		return bodyText, bodyHeadings
	}
	return articleText, articleHeadings
}

// readableArticle runs go-readability on doc and returns the parsed article
// content. Panics inside the library are treated as "no article".
func readableArticle(doc *html.Node, pageURL *url.URL) (article *html.Node, ok bool) {
	defer func() {
		if recover() != nil {
			article, ok = nil, false
		}
	}()
	a, err := readability.FromDocument(doc, pageURL)
	if err != nil || strings.TrimSpace(a.Content) == "" {
		return nil, false
	}
	content, err := html.Parse(strings.NewReader(a.Content))
	if err != nil {
		return nil, false
	}
	return findElement(content, atom.Body, content), true
}

// findElement returns the first element with the given atom in n's subtree,
// or fallback.
func findElement(n *html.Node, a atom.Atom, fallback *html.Node) *html.Node {
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && d.DataAtom == a {
			return d
		}
	}
	return fallback
}

// attr returns the value of n's attribute key (lower-case) or "".
func attr(n *html.Node, key string) string {
	v, _ := attrValue(n, key)
	return v
}

// attrValue returns the value of n's attribute key (lower-case) and whether
// it is present.
func attrValue(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// collapse trims s and collapses its whitespace runs to single spaces.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// textContent returns the concatenated text of n's subtree.
func textContent(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// htmlTitle returns the document title: <title>, og:title or the first <h1>.
func htmlTitle(doc *html.Node) string {
	var ogTitle, h1 string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Namespace != "" {
			continue
		}
		switch n.DataAtom {
		case atom.Title:
			if t := collapse(textContent(n)); t != "" {
				return t
			}
		case atom.Meta:
			prop := strings.ToLower(attr(n, "property") + attr(n, "name"))
			if ogTitle == "" && prop == "og:title" {
				ogTitle = collapse(attr(n, "content"))
			}
		case atom.H1:
			if h1 == "" {
				h1 = collapse(textContent(n))
			}
		}
	}
	if ogTitle != "" {
		return ogTitle
	}
	return h1
}

// documentBase returns the URL relative references resolve against: the
// page URL adjusted by the first <base href>. It is nil when neither gives an
// absolute URL.
func documentBase(doc *html.Node, pageURL *url.URL) *url.URL {
	base := pageURL
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.DataAtom != atom.Base {
			continue
		}
		href := strings.TrimSpace(attr(n, "href"))
		if href == "" {
			continue
		}
		ref, err := url.Parse(href)
		if err != nil {
			break
		}
		if pageURL != nil {
			base = pageURL.ResolveReference(ref)
		} else if ref.IsAbs() {
			base = ref
		}
		break
	}
	return base
}

// resolveHTTP resolves href against base and returns it without fragment if
// it is an absolute http(s) URL.
func resolveHTTP(href string, base *url.URL) (string, bool) {
	href = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, strings.TrimSpace(href))
	if href == "" {
		return "", false
	}
	u, err := url.Parse(href)
	if err != nil {
		return "", false
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}

// favicon returns the page icon: the first icon link, else the first
// apple-touch-icon link, else /favicon.ico on the page's host.
func favicon(doc *html.Node, base, pageURL *url.URL) string {
	var touch string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.DataAtom != atom.Link {
			continue
		}
		for _, rel := range strings.Fields(strings.ToLower(attr(n, "rel"))) {
			isIcon := rel == "icon"
			if !isIcon && (touch != "" || !strings.HasPrefix(rel, "apple-touch-icon")) {
				continue
			}
			u, ok := resolveHTTP(attr(n, "href"), base)
			if !ok {
				continue
			}
			if isIcon {
				return u
			}
			touch = u
		}
	}
	if touch != "" || pageURL == nil {
		return touch
	}
	u, ok := resolveHTTP("/favicon.ico", pageURL)
	if !ok {
		return ""
	}
	return u
}

// links returns the absolute http(s) targets of the document's <a href>.
func links(doc *html.Node, base *url.URL) []string {
	var out []string
	seen := make(map[string]bool)
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.DataAtom != atom.A || n.Namespace != "" {
			continue
		}
		u, ok := resolveHTTP(attr(n, "href"), base)
		if !ok || seen[u] {
			continue
		}
		seen[u] = true
		out = append(out, u)
	}
	return out
}
