package markup_test

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/channels/markup"
)

// neutral is a style of no platform, its marks and forms easy to tell apart.
var neutral = markup.Style{
	Bold: "**", Italic: "//", Strike: "--",
	Bullet:  "* ",
	Checked: "[v] ", Unchecked: "[_] ",
	BoldTableHeader: true,
	Escape:          strings.NewReplacer("$", `\$`).Replace,
	Link: func(url, label string) string {
		if label == "" {
			return "<" + url + ">"
		}
		return label + " <" + url + ">"
	},
}

// Markdown is written with the style's marks, bullet, link form and escaping.
func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, markdown, want string
	}{
		{"marks", "**b**, *i*, _i_, ~~s~~", "**b**, //i//, //i//, --s--"},
		{"a heading bold, its own marks dropped", "# Opening *hours*\nEvery day.", "**Opening hours**\n\nEvery day."},
		{"a link", "See [the docs](https://example.com/docs).", "See the docs <https://example.com/docs>."},
		{"a bare link", "Go to https://example.com now.", "Go to <https://example.com> now."},
		{"an e-mail address", "Write to help@example.com.", "Write to help@example.com <help@example.com>."},
		{"an image as its link", "![chart](https://example.com/c.png)", "chart <https://example.com/c.png>"},
		{"a nested list under the item's text", "- a\n  - b\n- c", "* a\n  * b\n* c"},
		{"a numbered list", "9. nine\n10. ten\n    more", "9. nine\n10. ten\n    more"},
		{"a loose list", "- a\n\n  again\n- b", "* a\n\n  again\n\n* b"},
		{"a task list", "- [x] done\n- [ ] todo", "* [v] done\n* [_] todo"},
		{"a quote of two paragraphs", "> a\n>\n> b", "> a\n>\n> b"},
		{"a table, its header bold", "| a | b |\n|---|---|\n| 1 | 2 |", "**a | b**\n1 | 2"},
		{"code kept, escaped", "Run `echo $x`:\n\n```sh\n**$y**\n```", "Run `echo \\$x`:\n\n```\n**\\$y**\n```"},
		{"Markdown's escapes read, then the style's", `\*not\* $5 &amp; more`, `*not* \$5 & more`},
		{"an HTML block kept whole", "<!--\nnote\n-->", "<!--\nnote\n-->"},
		{"a thematic break", "a\n\n---\n\nb", "a\n\n———\n\nb"},
		{"line breaks kept", "one\ntwo  \nthree", "one\ntwo\nthree"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := markup.Render(c.markdown, neutral); got != c.want {
				t.Fatalf("Render(%q)\n got %q\nwant %q", c.markdown, got, c.want)
			}
		})
	}
}
