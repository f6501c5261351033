package text

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzSplit(f *testing.F) {
	f.Add("Hello world. This is a test.\n\nSecond paragraph!", 0, 0)
	f.Add(prose(6), 40, 10)
	f.Add(strings.Repeat("x", 1500), 20, 5)
	f.Add("这是第一句。这是第二句！这是第三句？", 16, 4)
	f.Add("a\u00a0b\r\nc\td\x00e\xff\xfe", 1, -3)
	f.Add("e.g. this. And \"quoted.\" Then (paren.) end", 17, 100)
	f.Fuzz(func(t *testing.T, s string, maxTokens, overlap int) {
		opts := ChunkOptions{MaxTokens: maxTokens, Overlap: overlap}
		limit, _ := opts.resolve()
		chunks := Split(s, opts)
		if strings.TrimSpace(normalizeSpace(s)) == "" && chunks != nil {
			t.Fatalf("blank input gave %d chunks", len(chunks))
		}
		for i, c := range chunks {
			if real := len(encode(c.Text)); c.Tokens > limit || real != c.Tokens {
				t.Fatalf("chunk %d: Tokens %d (tiktoken-go counts %d), cap %d", i, c.Tokens, real, limit)
			}
			if c.Position != i || c.Text == "" || !utf8.ValidString(c.Text) {
				t.Fatalf("chunk %d malformed: %+v", i, c)
			}
		}
	})
}

func FuzzExtractHTML(f *testing.F) {
	f.Add([]byte(articlePage), "text/html")
	f.Add([]byte("<html><head><meta charset=\"windows-1252\"><base href=\"/x/\"></head><body><p>caf\xe9</p><a href=\"y#z\">y</a></body></html>"), "")
	f.Add([]byte(`<p>Unclosed <b>tags <table><tr><td>cell`), "text/html; charset=utf-16")
	f.Add([]byte("<svg><title>t</title></svg><a href='javascript:alert(1)'>x</a><a href='//h.example/p'>p</a>"), "text/html; charset=bogus")
	f.Add([]byte{0xff, 0xfe, '<', 0, 'p', 0, '>', 0}, "")
	pageURL, err := url.Parse("https://example.com/dir/page.html")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		page, err := ExtractHTML(body, contentType, pageURL)
		if err != nil {
			return
		}
		if !utf8.ValidString(page.Text) {
			t.Fatalf("text is not valid UTF-8: %q", page.Text)
		}
		seen := make(map[string]bool)
		for _, link := range page.Links {
			u, err := url.Parse(link)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || seen[link] {
				t.Fatalf("bad link %q in %q", link, page.Links)
			}
			seen[link] = true
		}
		for _, c := range Split(page.Text, ChunkOptions{MaxTokens: 64, Overlap: 8}) {
			if c.Tokens > 64 {
				t.Fatalf("chunk over cap: %d", c.Tokens)
			}
		}
	})
}
