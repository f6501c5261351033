package text

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

func TestDetect(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		urlPath     string
		body        string
		want        Kind
	}{
		// Media type first.
		{"text/html", "text/html; charset=utf-8", "/notes.md", "# not markdown", HTML},
		{"xhtml", "application/xhtml+xml", "", "", HTML},
		{"pdf", "application/pdf", "/page.html", "", PDF},
		{"markdown", "text/markdown", "", "plain words", Markdown},
		{"x-markdown upper case", "Text/X-Markdown; charset=UTF-8", "", "", Markdown},
		// Extension next.
		{"md extension", "", "/docs/README.md", "plain words", Markdown},
		{"markdown extension", "application/octet-stream", "/a/b.markdown", "", Markdown},
		{"pdf extension", "", "/files/report.PDF", "", PDF},
		{"html extension", "", "/index.htm", "", HTML},
		{"txt extension", "", "/notes.txt", "# Heading\n\n- a\n- b", Plain},
		{"full url with query", "", "https://example.com/raw/guide.md?plain=1#top", "", Markdown},
		{"text/plain with md extension", "text/plain; charset=utf-8", "/README.md", "", Markdown},
		{"text/plain without extension", "text/plain", "/notes", "# Heading\n\n- a\n- b", Plain},
		// Sniffing last.
		{"pdf magic", "", "", "%PDF-1.7\n...", PDF},
		{"doctype", "", "", "\n  <!DOCTYPE html><html><body>x</body></html>", HTML},
		{"html tag", "application/octet-stream", "/download", "<html lang=en><p>x", HTML},
		{"fragment with common tag", "", "", "<div class=\"a\">Hello</div>", HTML},
		{"xhtml with xml prolog", "", "", "<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"></html>", HTML},
		{"leading heading", "", "", "# Release notes\n\nAll good.", Markdown},
		{"code fences", "", "", "Example:\n```\ncode\n```\n", Markdown},
		{"list items", "", "", "Todo\n- one\n- two\n- three\n", Markdown},
		{"links", "", "", "See [a](https://a.example) and [b](https://b.example).", Markdown},
		{"plain prose", "", "", "Just some words. Nothing special - really.", Plain},
		{"angle bracket prose", "", "", "<3 and a < b > c", Plain},
		{"empty", "", "", "", Plain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Detect(tt.contentType, tt.urlPath, []byte(tt.body)); got != tt.want {
				t.Errorf("Detect(%q, %q, %q) = %q, want %q", tt.contentType, tt.urlPath, tt.body, got, tt.want)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	pdfBody := makePDF(t, "Handbook", pdfPagesText, nil)
	tests := []struct {
		name        string
		body        []byte
		contentType string
		pageURL     string
		wantKind    Kind
		wantTitle   string
		wantText    string
	}{
		{
			name:        "html",
			body:        []byte(`<html><head><title>T</title></head><body><nav>Menu</nav><p>Hello there.</p></body></html>`),
			contentType: "text/html",
			pageURL:     "https://example.com/",
			wantKind:    HTML,
			wantTitle:   "T",
			wantText:    "Hello there.",
		},
		{
			name:      "markdown by extension",
			body:      []byte("# Guide\n\nUse **bold** [links](https://x.example)."),
			pageURL:   "https://example.com/docs/guide.md",
			wantKind:  Markdown,
			wantTitle: "Guide",
			wantText:  "Guide\n\nUse bold links.",
		},
		{
			name:     "plain inline",
			body:     []byte("\xef\xbb\xbfLine one\r\nLine two   \r\n\r\n"),
			wantKind: Plain,
			wantText: "Line one\nLine two",
		},
		{
			name:        "latin-1 plain text",
			body:        []byte("Caf\xe9 cr\xe8me"),
			contentType: "text/plain; charset=iso-8859-1",
			wantKind:    Plain,
			wantText:    "Café crème",
		},
		{
			name:     "utf-16 with byte order mark",
			body:     []byte("\xff\xfeH\x00i\x00!\x00"),
			wantKind: Plain,
			wantText: "Hi!",
		},
		{
			name:      "pdf by sniffing",
			body:      pdfBody,
			wantKind:  PDF,
			wantTitle: "Handbook",
			wantText:  strings.Join(pdfPagesText[0], "\n") + "\n\n" + strings.Join(pdfPagesText[1], "\n"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pageURL *url.URL
			if tt.pageURL != "" {
				pageURL = mustURL(t, tt.pageURL)
			}
			page, kind, err := Extract(tt.body, tt.contentType, pageURL)
			if err != nil {
				t.Fatal(err)
			}
			if kind != tt.wantKind || page.Title != tt.wantTitle || page.Text != tt.wantText {
				t.Errorf("Extract = %q, %+v; want %q, title %q, text %q", kind, page, tt.wantKind, tt.wantTitle, tt.wantText)
			}
		})
	}
}

func TestExtractUnsupported(t *testing.T) {
	tests := []struct {
		name        string
		body        []byte
		contentType string
		wantType    string
	}{
		{"png by media type", pngHeader, "image/png", "image/png"},
		{"png sniffed", pngHeader, "", "image/png"},
		{"png as octet-stream", pngHeader, "application/octet-stream", "image/png"},
		{"zip", []byte("PK\x03\x04\x14\x00\x00\x00"), "application/zip", "application/zip"},
		{"docx", []byte("PK\x03\x04"), "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{"invalid utf-8 declared as text", []byte("abc\xff\xfe\xfddef"), "text/plain", "text/plain"},
		{"binary with NUL bytes", []byte("abc\x00\x00\x00def"), "", "application/octet-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, kind, err := Extract(tt.body, tt.contentType, nil)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Extract = %q, %+v, %v; want ErrUnsupported", kind, page, err)
			}
			if !strings.Contains(err.Error(), tt.wantType) {
				t.Errorf("error %q does not name %q", err, tt.wantType)
			}
			if kind != "" {
				t.Errorf("kind = %q, want empty", kind)
			}
		})
	}
}
