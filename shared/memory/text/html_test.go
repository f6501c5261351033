package text

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

const articlePage = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>  Quarterly   Report
     | Example Corp </title>
  <meta property="og:title" content="OG title that must not win">
  <link rel="stylesheet" href="/site.css">
  <link rel="icon" href="/static/favicon.png">
  <style>.menu { color: red; } body { font-family: Inter; }</style>
  <script>var tracking = "SECRET_TRACKER"; window.dataLayer = [];</script>
</head>
<body>
  <header class="site-header">
    <div class="logo">Example Corp Banner</div>
  </header>
  <nav class="main-nav">
    <ul>
      <li><a href="/">Home</a></li>
      <li><a href="/pricing#plans">Pricing</a></li>
      <li><a href="/blog/">Blog</a></li>
      <li><a href="mailto:sales@example.com">Email sales</a></li>
    </ul>
  </nav>
  <div id="cookie-banner" class="cookie-consent">
    We use cookies to improve your experience. <button>Accept all cookies</button>
  </div>
  <main>
    <article>
      <header><h1>Quarterly report: revenue grew</h1></header>
      <p>Revenue grew by twelve percent in the third quarter, driven by strong demand for the agent platform among mid-sized customers in Europe and Asia.</p>
      <p>Operating costs stayed flat because the infrastructure team finished the migration to the new scheduler, which reduced idle capacity across all regions by a third.</p>
      <p>The board approved a new hiring plan for the support organisation, with a focus on customers who run agents around the clock and need answers quickly.</p>
      <p>See the <a href="/blog/q3-details#numbers">detailed numbers</a> and the <a href="https://partner.example.net/press?id=7">partner announcement</a> for more context on these results.</p>
      <script>document.write("INLINE_SCRIPT_TEXT")</script>
      <p>Next quarter the company expects growth to continue at a similar pace, although currency effects may shave a point off the reported figures.</p>
    </article>
  </main>
  <div class="comments"><h3>2 comments</h3><div class="comment"><p>Great post, thanks!</p></div><div class="comment"><p>I disagree with the numbers.</p></div></div>
  <aside class="related"><h2>Related posts</h2><a href="/blog/older">An older post</a></aside>
  <form action="/subscribe"><label>Subscribe to our newsletter</label><input name="email"></form>
  <footer>
    <p>© 2024 Example Corp. All rights reserved.</p>
    <a href="/privacy">Privacy</a> <a href="/">Home again</a> <a href="javascript:void(0)">Do nothing</a> <a href="tel:+123">Call</a>
  </footer>
</body>
</html>`

func TestExtractHTMLArticlePage(t *testing.T) {
	page, err := ExtractHTML([]byte(articlePage), "text/html; charset=utf-8", mustURL(t, "https://example.com/blog/q3"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Quarterly Report | Example Corp"; page.Title != want {
		t.Errorf("Title = %q, want %q", page.Title, want)
	}
	if want := "https://example.com/static/favicon.png"; page.Favicon != want {
		t.Errorf("Favicon = %q, want %q", page.Favicon, want)
	}
	for _, want := range []string{
		"Quarterly report: revenue grew\n\nRevenue grew by twelve percent",
		"Operating costs stayed flat",
		"See the detailed numbers and the partner announcement for more context",
		"currency effects may shave a point off the reported figures.",
	} {
		if !strings.Contains(page.Text, want) {
			t.Errorf("Text lacks %q\ntext:\n%s", want, page.Text)
		}
	}
	for _, unwanted := range []string{
		"Home", "Pricing", "Email sales", "Example Corp Banner", "cookies", "Accept",
		"SECRET_TRACKER", "INLINE_SCRIPT_TEXT", "color: red", "font-family",
		"Related posts", "older post", "Subscribe", "All rights reserved", "Privacy",
		// The element filter keeps comment threads; readability drops them,
		// which shows that its article was used.
		"Great post", "disagree",
	} {
		if strings.Contains(page.Text, unwanted) {
			t.Errorf("Text contains boilerplate %q\ntext:\n%s", unwanted, page.Text)
		}
	}
	wantLinks := []string{
		"https://example.com/",
		"https://example.com/pricing",
		"https://example.com/blog/",
		"https://example.com/blog/q3-details",
		"https://partner.example.net/press?id=7",
		"https://example.com/blog/older",
		"https://example.com/privacy",
	}
	if !reflect.DeepEqual(page.Links, wantLinks) {
		t.Errorf("Links =\n%q\nwant\n%q", page.Links, wantLinks)
	}
}

func TestExtractHTMLFallbackWalk(t *testing.T) {
	tests := []struct {
		name     string
		html     string
		want     string
		excluded []string
	}{
		{
			name: "short page readability rejects",
			html: `<html><head><title>Note</title></head><body><nav><a href="/">Home</a></nav><p>Just a short note.</p><footer>Footer text</footer></body></html>`,
			want: "Just a short note.",
		},
		{
			name: "body text without paragraphs",
			html: `<body>Plain body text<br>second line<div>A block</div></body>`,
			want: "Plain body text\nsecond line\n\nA block",
		},
		{
			name: "headings lists tables and pre",
			html: `<body><h2>Setup</h2><ul><li>Install the <b>CLI</b></li><li>Log in</li></ul>` +
				`<table><tr><th>Plan</th><th>Price</th></tr><tr><td>Pro</td><td>10</td></tr></table>` +
				`<pre>go test
  ./...</pre></body>`,
			want: "Setup\n\nInstall the CLI\n\nLog in\n\nPlan | Price\nPro | 10\n\ngo test\n./...",
		},
		{
			name: "hidden and role-marked chrome",
			html: `<body><div role="navigation">Menu A</div><div role="banner">Top banner</div>` +
				`<p hidden>Hidden text</p><p aria-hidden="true">Aria hidden</p><p style="display: none">Styled away</p>` +
				`<div class="breadcrumbs">Home › Docs</div><div id="sidebar">Side</div>` +
				`<p>Visible content.</p><div role="contentinfo">Contact info</div><template><p>Template</p></template>` +
				`<svg><text>Vector text</text></svg><noscript>Enable JS</noscript><iframe>Frame</iframe></body>`,
			want: "Visible content.",
		},
		{
			name: "navigation word in a wrapper holding the article is kept",
			html: `<body><div class="page-with-nav"><article><p>Article inside a wrapper.</p></article></div></body>`,
			want: "Article inside a wrapper.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := ExtractHTML([]byte(tt.html), "text/html", nil)
			if err != nil {
				t.Fatal(err)
			}
			if page.Text != tt.want {
				t.Errorf("Text = %q, want %q", page.Text, tt.want)
			}
		})
	}
}

func TestExtractHTMLTitle(t *testing.T) {
	tests := []struct {
		name, html, want string
	}{
		{"title element", `<title> A  <b>title</b>
 here </title><h1>Heading</h1>`, "A <b>title</b> here"},
		{"og:title when no title", `<head><meta property="og:title" content="  Open   Graph "></head><h1>Heading</h1>`, "Open Graph"},
		{"first h1", `<body><h1> First
 heading </h1><h1>Second</h1></body>`, "First heading"},
		{"svg title ignored", `<body><svg><title>Icon</title></svg><h1>Real</h1></body>`, "Real"},
		{"none", `<p>No title.</p>`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := ExtractHTML([]byte(tt.html), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if page.Title != tt.want {
				t.Errorf("Title = %q, want %q", page.Title, tt.want)
			}
		})
	}
}

func TestExtractHTMLFaviconAndLinks(t *testing.T) {
	tests := []struct {
		name        string
		html        string
		pageURL     string
		wantFavicon string
		wantLinks   []string
	}{
		{
			name:        "default favicon on the page host",
			html:        `<a href="b.html">B</a><a href="b.html#top">B again</a><a href="//cdn.example.org/x">CDN</a>`,
			pageURL:     "https://example.com/docs/a.html?x=1",
			wantFavicon: "https://example.com/favicon.ico",
			wantLinks:   []string{"https://example.com/docs/b.html", "https://cdn.example.org/x"},
		},
		{
			name:        "shortcut icon preferred to apple-touch-icon",
			html:        `<link rel="apple-touch-icon" href="/touch.png"><link rel="Shortcut Icon" href="img/fav.ico">`,
			pageURL:     "http://example.com/dir/page",
			wantFavicon: "http://example.com/dir/img/fav.ico",
		},
		{
			name:        "apple-touch-icon when alone",
			html:        `<link rel="apple-touch-icon" href="/touch.png">`,
			pageURL:     "http://example.com/dir/page",
			wantFavicon: "http://example.com/touch.png",
		},
		{
			name:        "base href",
			html:        `<head><base href="https://static.example.org/v2/"><link rel="icon" href="icon.svg"></head><a href="guide/">Guide</a><a href="/root">Root</a><a href="ftp://files.example.org/f">FTP</a>`,
			pageURL:     "https://example.com/start",
			wantFavicon: "https://static.example.org/v2/icon.svg",
			wantLinks:   []string{"https://static.example.org/v2/guide/", "https://static.example.org/root"},
		},
		{
			name:      "inline content drops relative links",
			html:      `<a href="/relative">R</a><a href="https://example.com/abs#frag">A</a><a href="mailto:x@example.com">M</a>`,
			wantLinks: []string{"https://example.com/abs"},
		},
		{
			name:      "inline content with absolute base",
			html:      `<base href="https://example.com/docs/"><a href="page">P</a>`,
			wantLinks: []string{"https://example.com/docs/page"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pageURL *url.URL
			if tt.pageURL != "" {
				pageURL = mustURL(t, tt.pageURL)
			}
			page, err := ExtractHTML([]byte(tt.html), "text/html", pageURL)
			if err != nil {
				t.Fatal(err)
			}
			if page.Favicon != tt.wantFavicon {
				t.Errorf("Favicon = %q, want %q", page.Favicon, tt.wantFavicon)
			}
			if !reflect.DeepEqual(page.Links, tt.wantLinks) {
				t.Errorf("Links = %q, want %q", page.Links, tt.wantLinks)
			}
		})
	}
}

func TestExtractHTMLCharset(t *testing.T) {
	// "Café naïve “quoted” €5" in windows-1252.
	cp1252 := "Caf\xe9 na\xefve \x93quoted\x94 \x805"
	const want = "Café naïve “quoted” €5"
	tests := []struct {
		name        string
		body        string
		contentType string
		want        string
	}{
		{"meta charset windows-1252", `<html><head><meta charset="windows-1252"><title>` + cp1252 + `</title></head><body><p>` + cp1252 + `</p></body></html>`, "text/html", want},
		{"meta http-equiv iso-8859-1", `<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"><title>` + cp1252 + `</title></head><body><p>` + cp1252 + `</p></body></html>`, "", want},
		{"content type charset wins over meta", `<html><head><meta charset="utf-8"><title>` + cp1252 + `</title></head><body><p>` + cp1252 + `</p></body></html>`, "text/html; charset=windows-1252", want},
		{"undeclared utf-8", `<html><head><title>` + want + `</title></head><body><p>` + want + `</p></body></html>`, "", want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := ExtractHTML([]byte(tt.body), tt.contentType, nil)
			if err != nil {
				t.Fatal(err)
			}
			if page.Title != tt.want || page.Text != tt.want {
				t.Errorf("Title = %q, Text = %q; want %q", page.Title, page.Text, tt.want)
			}
		})
	}
}
