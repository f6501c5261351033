package text

import (
	"net/url"
	"reflect"
	"testing"
)

func TestPlainHeadings(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Heading
	}{
		{"man page: sections, subsections and option terms", `TAR(1)          GNU TAR Manual          TAR(1)

NAME
       tar - an archiving utility

OPTIONS
   Operation modifiers
       --check-device
              Check device numbers when creating incremental archives.

       -g, --listed-incremental=FILE
              Handle new GNU-format incremental backups.

SEE ALSO
       gzip(1)`, []Heading{
			{1, "NAME"}, {1, "OPTIONS"}, {2, "Operation modifiers"}, {3, "--check-device"},
			{3, "-g, --listed-incremental=FILE"}, {1, "SEE ALSO"},
		}},
		{"configuration reference: a term on the line of its description", `     Host    Restricts the following declarations to be only for those
             hosts that match one of the patterns.

     Compression
             Specifies whether to use compression.`, []Heading{{1, "Host"}, {1, "Compression"}}},
		{"FAQ: numbered questions, one on two lines", `     Frequently Asked Questions

 1. Is zlib Y2K-compliant?

    Yes. zlib doesn't handle dates.

30. Is there some simpler, easier to read version of inflate I can look at to
    understand the deflate format?

    Look in contrib/puff.`, []Heading{
			{1, "1. Is zlib Y2K-compliant?"},
			{1, "30. Is there some simpler, easier to read version of inflate I can look at to\nunderstand the deflate format?"},
		}},
		{"no headings: lead-ins, list items and prose", `DESCRIPTION
       Import a project with:

           $ git init

       • The object database is the rather elegant system used to store the
         history of your project.

       Plain prose that wraps
       on the same indentation.`, []Heading{{1, "DESCRIPTION"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plainHeadings(plainText(tt.text)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plainHeadings = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestExtractHeadings(t *testing.T) {
	tests := []struct {
		name, path, body string
		want             []Heading
	}{
		{"markdown", "/a.md", "# Redis\n\nIntro.\n\n## Building\n\nRun make.\n\n### Fixing *build* problems\n\nText.\n",
			[]Heading{{1, "Redis"}, {2, "Building"}, {3, "Fixing build problems"}}},
		{"html", "/a.html", "<html><body><h1>Memory model</h1><p>Intro.</p><h2>Happens  before</h2><p>Text.</p><h3>Locks</h3><p>More.</p></body></html>",
			[]Heading{{1, "Memory model"}, {2, "Happens before"}, {3, "Locks"}}},
		{"plain", "/a.txt", "NAME\n       tool - does things\n", []Heading{{1, "NAME"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, _, err := Extract([]byte(tt.body), "", &url.URL{Path: tt.path})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(page.Headings, tt.want) {
				t.Errorf("Headings = %+v, want %+v", page.Headings, tt.want)
			}
		})
	}
}

// TestSplitSections checks that each chunk records the path of the headings its own text
// stands under, nested by level, and that a heading not found in the text is skipped.
func TestSplitSections(t *testing.T) {
	para := func(word string) string { return repeatWords(word, 120) }
	text := "Intro " + para("intro") + "\n\nOPTIONS\nOperation modifiers\n--check-device\n" + para("check") +
		"\n\n--verbose\n" + para("verbose") + "\n\nSEE ALSO\n" + para("see")
	headings := []Heading{{1, "OPTIONS"}, {2, "Operation modifiers"}, {3, "--check-device"}, {2, "Missing heading"},
		{3, "--verbose"}, {1, "SEE ALSO"}}
	var got []string
	for _, c := range Split(text, ChunkOptions{MaxTokens: 150, Overlap: -1, Headings: headings}) {
		got = append(got, c.Section)
	}
	want := []string{"", "OPTIONS › Operation modifiers › --check-device", "OPTIONS › Operation modifiers › --verbose", "SEE ALSO"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections = %q, want %q", got, want)
	}
	// A chunk that opens with headings alone stands under the section they open.
	md := Split("Teapots\n\nCleaning\n\nRinse it with warm water.", ChunkOptions{Headings: []Heading{{1, "Teapots"}, {2, "Cleaning"}}})
	if len(md) != 1 || md[0].Section != "Teapots › Cleaning" {
		t.Errorf("chunks %+v, want one under Teapots › Cleaning", md)
	}
	for _, c := range Split(text, ChunkOptions{MaxTokens: 150, Overlap: -1}) {
		if c.Section != "" {
			t.Errorf("without headings, chunk %d has section %q", c.Position, c.Section)
		}
	}
}

// repeatWords returns n space-separated copies of word.
func repeatWords(word string, n int) string {
	b := make([]byte, 0, n*(len(word)+1))
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, word...)
	}
	return string(b)
}
