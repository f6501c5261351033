package text

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// Kind is the kind of a fetched or supplied document.
type Kind string

// Document kinds.
const (
	HTML     Kind = "html"
	PDF      Kind = "pdf"
	Markdown Kind = "markdown"
	Plain    Kind = "text"
)

// ErrUnsupported reports content that is not a document Extract can read,
// such as an image, an archive or other binary data. The wrapping error's
// message names the media type.
var ErrUnsupported = errors.New("unsupported content type")

// Detect picks the kind of a document from, in order: its media type
// (text/html and application/xhtml+xml, application/pdf, text/markdown and
// text/x-markdown), the extension of urlPath (.html, .htm, .xhtml, .pdf,
// .md, .markdown, .txt), a text/plain media type, and finally the content:
// the %PDF- magic, a leading doctype or common HTML tag, or Markdown
// features such as a leading "# " heading, code fences, several headings,
// list items or links. text/plain only decides after the extension, because
// servers often send Markdown files as text/plain. contentType and urlPath
// may be empty (content supplied inline); urlPath may also be a full URL.
// Anything unrecognised is Plain.
func Detect(contentType, urlPath string, body []byte) Kind {
	mt := mediaType(contentType)
	switch mt {
	case "text/html", "application/xhtml+xml":
		return HTML
	case "application/pdf", "application/x-pdf":
		return PDF
	case "text/markdown", "text/x-markdown":
		return Markdown
	}
	if k, ok := kindFromPath(urlPath); ok {
		return k
	}
	if mt == "text/plain" {
		return Plain
	}
	return sniff(body)
}

// Extract detects the kind of a document and extracts its readable content.
// For HTML it is ExtractHTML. For the other kinds only Text is set, plus
// Title for Markdown (the first heading) and PDF (the Title metadata, if
// any). Text and Markdown are decoded from the charset of contentType (or a
// UTF-16 byte order mark) and must otherwise be valid UTF-8. Binary content,
// such as an image/png or application/zip media type or bytes that are not
// text, gives an error wrapping ErrUnsupported that names the media type,
// and an empty Kind.
func Extract(body []byte, contentType string, pageURL *url.URL) (Page, Kind, error) {
	mt := mediaType(contentType)
	if binaryMediaType(mt) {
		return Page{}, "", fmt.Errorf("%w: %s", ErrUnsupported, mt)
	}
	urlPath := ""
	if pageURL != nil {
		urlPath = pageURL.Path
	}
	kind := Detect(contentType, urlPath, body)
	switch kind {
	case HTML:
		page, err := ExtractHTML(body, contentType, pageURL)
		if err != nil {
			return Page{}, HTML, err
		}
		return page, HTML, nil
	case PDF:
		title, text, err := readPDF(body)
		if err != nil {
			return Page{}, PDF, err
		}
		return Page{Title: title, Text: text}, PDF, nil
	}
	s, ok := decodeText(body, contentType)
	if !ok {
		return Page{}, "", fmt.Errorf("%w: %s", ErrUnsupported, describeMediaType(mt, body))
	}
	if kind == Markdown {
		title, text, headings := renderMarkdown([]byte(s))
		return Page{Title: title, Text: text, Headings: headings}, Markdown, nil
	}
	text := plainText(s)
	return Page{Text: text, Headings: plainHeadings(text)}, Plain, nil
}

// mediaType returns the lower-case media type of a Content-Type value.
func mediaType(contentType string) string {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// kindFromPath maps the extension of a URL path to a kind.
func kindFromPath(p string) (Kind, bool) {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".html", ".htm", ".xhtml":
		return HTML, true
	case ".pdf":
		return PDF, true
	case ".md", ".markdown", ".mdown", ".mkd":
		return Markdown, true
	case ".txt", ".text":
		return Plain, true
	}
	return "", false
}

// binaryMediaType reports whether mt is an image, audio, video, font,
// archive, executable or office format, which never holds a readable
// document.
func binaryMediaType(mt string) bool {
	for _, prefix := range []string{
		"image/", "audio/", "video/", "font/", "model/",
		"application/vnd.openxmlformats", "application/vnd.ms-", "application/vnd.oasis.opendocument",
	} {
		if strings.HasPrefix(mt, prefix) {
			return true
		}
	}
	switch mt {
	case "application/zip", "application/gzip", "application/x-gzip", "application/x-tar",
		"application/x-7z-compressed", "application/x-rar-compressed", "application/vnd.rar",
		"application/x-bzip2", "application/x-xz", "application/zstd", "application/java-archive",
		"application/wasm", "application/x-msdownload", "application/x-executable",
		"application/msword", "application/epub+zip":
		return true
	}
	return false
}

// describeMediaType names content for an error: its declared media type, or
// the sniffed one when none (or only application/octet-stream) was given.
func describeMediaType(mt string, body []byte) string {
	if mt != "" && mt != "application/octet-stream" {
		return mt
	}
	return mediaType(http.DetectContentType(body))
}

// htmlStart matches the start of an HTML document: a doctype or one of the
// tags pages commonly start with.
var htmlStart = regexp.MustCompile(`^(?i)<(!doctype\s+html|html|head|body|title|meta|link|base|script|style|div|p|h[1-6]|table|article|section|header|nav|main|iframe|a|b|br|font|span|ul|ol)[\s>/]`)

// markdown line patterns used by sniffing.
var (
	mdHeading = regexp.MustCompile(`^#{1,6}\s+\S`)
	mdList    = regexp.MustCompile(`^\s*([-*+]|\d{1,3}[.)])\s+\S`)
	mdFence   = regexp.MustCompile("^\\s*(```|~~~)")
	mdLink    = regexp.MustCompile(`\[[^\]\n]+\]\([^)\s]+\)`)
)

// sniff guesses the kind from the content.
func sniff(body []byte) Kind {
	head := body[:min(len(body), 4096)]
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\uFEFF")), " \t\r\n\f")
	switch {
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return PDF
	case htmlStart.Match(head):
		return HTML
	case bytes.HasPrefix(head, []byte("<?xml")) && bytes.Contains(bytes.ToLower(head), []byte("<html")):
		return HTML
	case looksLikeMarkdown(head):
		return Markdown
	}
	return Plain
}

// looksLikeMarkdown applies simple Markdown heuristics to the start of a
// document: a leading ATX heading, code fences, several headings, several
// list items or links, or a heading together with a list item or link.
func looksLikeMarkdown(head []byte) bool {
	var headings, lists, fences, links int
	first := true
	for line := range bytes.SplitSeq(head, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if mdHeading.Match(line) {
			if first {
				return true
			}
			headings++
		}
		first = false
		if mdList.Match(line) {
			lists++
		}
		if mdFence.Match(line) {
			fences++
		}
		links += len(mdLink.FindAllIndex(line, -1))
	}
	return fences >= 2 || headings >= 2 || lists >= 3 || links >= 2 ||
		headings >= 1 && lists+links >= 1
}

// decodeText decodes a text body to UTF-8: by its UTF-16 byte order mark,
// else by the charset parameter of contentType, else as UTF-8 (a UTF-8 byte
// order mark is dropped). It reports false for content that is not text:
// invalid UTF-8 without a declared charset, NUL bytes or many control
// characters.
func decodeText(body []byte, contentType string) (string, bool) {
	label := ""
	switch {
	case bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		label, body = "utf-16le", body[2:]
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}):
		label, body = "utf-16be", body[2:]
	default:
		if _, params, err := mime.ParseMediaType(contentType); err == nil {
			label = params["charset"]
		}
	}
	enc, name := charset.Lookup(label)
	if enc != nil && name != "utf-8" {
		decoded, err := enc.NewDecoder().Bytes(body)
		if err != nil {
			return "", false
		}
		body = decoded
	}
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	if !utf8.Valid(body) {
		return "", false
	}
	s := string(body)
	controls, total := 0, 0
	for _, r := range s {
		total++
		if r == 0 {
			return "", false
		}
		if unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' && r != '\f' {
			controls++
		}
	}
	return s, controls*20 <= total
}

// plainText normalises line endings and trims trailing spaces and blank
// lines at the ends of a plain-text document.
func plainText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}
