package telegram_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/agentplane/agentplane/shared/adapters/channels/telegram"
)

func TestFormat(t *testing.T) {
	cases := []struct {
		name, markdown, want string
	}{
		{"plain text escaped", `1 < 2 & 3 > "2"`, `1 &lt; 2 &amp; 3 &gt; &quot;2&quot;`},
		{"bold", "**bold** and __bold__", "<b>bold</b> and <b>bold</b>"},
		{"italic", "*it* and _it_", "<i>it</i> and <i>it</i>"},
		{"nested", "**bold _and italic_**", "<b>bold <i>and italic</i></b>"},
		{"strikethrough", "~~gone~~", "<s>gone</s>"},
		{"code", "run `a<b && c`", "run <code>a&lt;b &amp;&amp; c</code>"},
		{"fenced code", "```\nx := <-ch\n```", "<pre>x := &lt;-ch</pre>"},
		{"fenced code with a language", "```go\nfmt.Println(\"hi\")\n```", `<pre><code class="language-go">fmt.Println(&quot;hi&quot;)</code></pre>`},
		{"indented code", "    a && b", "<pre>a &amp;&amp; b</pre>"},
		{"link", "[the *source*](https://example.org/?a=1&b=2)", `<a href="https://example.org/?a=1&amp;b=2">the <i>source</i></a>`},
		{"autolink", "<https://example.org>", `<a href="https://example.org">https://example.org</a>`},
		{"a link Telegram would not open", "[home](/index.html)", "home"},
		{"image", "![a chart](https://example.org/c.png)", `<a href="https://example.org/c.png">a chart</a>`},
		{"headings", "# Title\n\n### Part", "<b>Title</b>\n\n<b>Part</b>"},
		{"paragraphs and lines", "one\ntwo\n\nthree", "one\ntwo\n\nthree"},
		{"bullets", "- one\n- **two**\n  - nested", "• one\n• <b>two</b>\n   • nested"},
		{"numbers", "3. c\n4. d", "3. c\n4. d"},
		{"quote", "> said\n> > again", "<blockquote>said\nagain</blockquote>"},
		{"raw html shown as text", "<b>hi</b>\n\n<div>x</div>", "&lt;b&gt;hi&lt;/b&gt;\n\n&lt;div&gt;x&lt;/div&gt;"},
		{"thematic break", "a\n\n---\n\nb", "a\n\n———\n\nb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := telegram.Format(tc.markdown)
			if len(got) != 1 || got[0] != tc.want {
				t.Fatalf("Format(%q) = %q; want %q", tc.markdown, got, tc.want)
			}
		})
	}
}

func TestFormatEmpty(t *testing.T) {
	for _, md := range []string{"", " \n\n "} {
		if got := telegram.Format(md); len(got) != 0 {
			t.Errorf("Format(%q) = %q; want no message", md, got)
		}
	}
}

// units is s's length in UTF-16 code units, as Telegram counts a message.
func units(s string) int { return len(utf16.Encode([]rune(s))) }

func TestFormatSplits(t *testing.T) {
	block := func(s string, n int) string { return strings.Repeat(s, n) }
	cases := []struct {
		name     string
		markdown string
		// want are the messages: how each starts and how many characters it shows.
		wantStarts []string
		wantUnits  []int
	}{
		{name: "blocks that fit together", markdown: block("a", 2000) + "\n\n" + block("b", 2000),
			wantStarts: []string{"aaa"}, wantUnits: []int{4002}},
		{name: "blocks cut between them", markdown: block("a", 3000) + "\n\n" + "**" + block("b", 3000) + "**",
			wantStarts: []string{"aaa", "<b>bbb"}, wantUnits: []int{3000, 3000}},
		{name: "a paragraph longer than a message", markdown: block("word ", 1000) + "**end**",
			wantStarts: []string{"word", "word"}, wantUnits: []int{4094, 908}},
		{name: "code longer than a message", markdown: "```\n" + block("x < y\n", 1000) + "```",
			wantStarts: []string{"<pre>x &lt; y", "<pre>x &lt; y"}, wantUnits: []int{4091, 1907}},
		{name: "emoji counted as Telegram counts them", markdown: block("😀 ", 3000),
			wantStarts: []string{"😀", "😀", "😀"}, wantUnits: []int{3455, 3455, 2087}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := telegram.Format(tc.markdown)
			var sizes []int
			for _, m := range got {
				sizes = append(sizes, units(shown(m)))
			}
			if !reflect.DeepEqual(sizes, tc.wantUnits) {
				t.Fatalf("messages show %v characters; want %v", sizes, tc.wantUnits)
			}
			for i, m := range got {
				if !strings.HasPrefix(m, tc.wantStarts[i]) {
					t.Errorf("message %d starts %.20q; want %q", i, m, tc.wantStarts[i])
				}
			}
			for i, n := range sizes {
				if n > telegram.MaxText {
					t.Errorf("message %d shows %d characters; more than %d", i, n, telegram.MaxText)
				}
			}
		})
	}
}

// shown is a message's text as Telegram shows it: without its tags, its entities read.
func shown(html string) string {
	var b strings.Builder
	in := false
	for _, r := range html {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`).Replace(b.String())
}
