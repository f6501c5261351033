package text

import "testing"

func TestMarkdownText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "headings and paragraphs",
			in:   "# Title\n\nSome *emphasised* and **strong** text\nwrapped over lines.\n\nSetext heading\n--------------\n\nLast paragraph.",
			want: "Title\n\nSome emphasised and strong text wrapped over lines.\n\nSetext heading\n\nLast paragraph.",
		},
		{
			name: "lists become paragraphs",
			in:   "Steps:\n\n- install the CLI\n- log in\n  1. nested *one*\n\n3. third item",
			want: "Steps:\n\ninstall the CLI\n\nlog in\n\nnested one\n\nthird item",
		},
		{
			name: "links keep text and drop urls",
			in:   "Read [the guide](https://example.com/guide \"Guide title\"), the ![diagram](img.png) and <https://example.com/auto>. Also [ref][r].\n\n[r]: https://example.com/ref",
			want: "Read the guide, the diagram and https://example.com/auto. Also ref.",
		},
		{
			name: "code",
			in:   "Run `go test` now.\n\n```go\nfunc main() {\n\tprintln(\"hi\")\n}\n```\n\n    indented code",
			want: "Run go test now.\n\nfunc main() {\n\tprintln(\"hi\")\n}\n\nindented code",
		},
		{
			name: "escapes entities and inline html",
			in:   "Fish \\& chips &amp; peas &#169; <span>inline</span> \\*not emphasis\\*",
			want: "Fish & chips & peas © inline *not emphasis*",
		},
		{
			name: "tables blockquotes and task lists",
			in:   "> Quoted **text**.\n\n| Plan | Price |\n|------|-------|\n| Pro  | 10    |\n\n- [x] done\n- [ ] todo\n\n~~old~~ new",
			want: "Quoted text.\n\nPlan | Price\nPro | 10\n\ndone\n\ntodo\n\nold new",
		},
		{
			name: "html block and front matter",
			in:   "---\ntitle: Doc\n---\n<div class=\"note\">\n<p>Boxed <b>note</b></p>\n</div>\n\n<!-- hidden comment -->\n\nAfter.",
			want: "Boxed note\n\nAfter.",
		},
		{
			name: "empty",
			in:   "",
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MarkdownText([]byte(tt.in)); got != tt.want {
				t.Errorf("MarkdownText() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
