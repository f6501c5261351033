package text

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// prose returns deterministic English text: paragraphs of distinct
// sentences, each sentence well below any chunk size used in the tests.
func prose(paragraphs int) string {
	topics := []string{"memory", "tenants", "agents", "retrieval", "embeddings", "schedules", "workflows", "billing"}
	verbs := []string{"explains", "questions", "summarises", "compares", "revisits", "documents"}
	var b strings.Builder
	n := 0
	for p := range paragraphs {
		if p > 0 {
			b.WriteString("\n\n")
		}
		for s := range 1 + p%6 {
			if s > 0 {
				b.WriteString(" ")
			}
			n++
			fmt.Fprintf(&b, "Sentence %d %s how %s interact with %s across %d regions, and why operators care.",
				n, verbs[n%len(verbs)], topics[n%len(topics)], topics[(n*3+1)%len(topics)], n*7)
		}
	}
	return b.String()
}

// pseudoRandomWord returns a deterministic, non-periodic run of n letters
// and digits without spaces.
func pseudoRandomWord(n int) string {
	return pseudoRandom(n, []rune("abcdefghijklmnopqrstuvwxyz0123456789"))
}

// pseudoRandom returns n characters drawn deterministically from alphabet.
func pseudoRandom(n int, alphabet []rune) string {
	var b strings.Builder
	x := uint32(2463534242)
	for range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteRune(alphabet[x%uint32(len(alphabet))])
	}
	return b.String()
}

// span is where a chunk lies in the normalised input.
type span struct{ start, end int }

// locate checks the invariants every Split result must satisfy and returns
// where each chunk lies in the normalised input: each chunk respects the
// cap, has a correct Tokens and Position, is a contiguous substring of the
// normalised input, and the chunks cover the input in order with only
// separators between them.
func locate(t *testing.T, input string, chunks []Chunk, maxTokens int) []span {
	t.Helper()
	norm := normalizeSpace(input)
	spans := make([]span, len(chunks))
	from := 0
	for i, c := range chunks {
		if c.Position != i {
			t.Fatalf("chunk %d: Position = %d", i, c.Position)
		}
		if c.Tokens > maxTokens {
			t.Fatalf("chunk %d: %d tokens > cap %d", i, c.Tokens, maxTokens)
		}
		if got := len(encode(c.Text)); got != c.Tokens {
			t.Fatalf("chunk %d: Tokens field %d, tiktoken-go counts %d", i, c.Tokens, got)
		}
		if !utf8.ValidString(c.Text) || c.Text == "" {
			t.Fatalf("chunk %d: empty or invalid UTF-8 %q", i, c.Text)
		}
		k := strings.Index(norm[from:], c.Text)
		if k < 0 {
			t.Fatalf("chunk %d is not a substring of the normalised input (after offset %d): %q", i, from, c.Text)
		}
		spans[i] = span{from + k, from + k + len(c.Text)}
		if i == 0 {
			if spans[0].start != 0 {
				t.Fatalf("first chunk starts at %d", spans[0].start)
			}
		} else {
			prev := spans[i-1]
			if spans[i].end <= prev.end {
				t.Fatalf("chunk %d does not advance: ends at %d, previous at %d", i, spans[i].end, prev.end)
			}
			if spans[i].start > prev.end && strings.TrimSpace(norm[prev.end:spans[i].start]) != "" {
				t.Fatalf("text between chunk %d and %d is lost: %q", i-1, i, norm[prev.end:spans[i].start])
			}
		}
		from = spans[i].start + 1
	}
	if len(spans) > 0 && spans[len(spans)-1].end != len(norm) {
		t.Fatalf("last chunk ends at %d, input has %d bytes", spans[len(spans)-1].end, len(norm))
	}
	return spans
}

func TestSplitProse(t *testing.T) {
	input := prose(40)
	norm := normalizeSpace(input)
	tests := []struct {
		name    string
		opts    ChunkOptions
		max     int
		overlap int
	}{
		{"defaults", ChunkOptions{}, 400, 60},
		{"small chunks", ChunkOptions{MaxTokens: 120, Overlap: 30}, 120, 30},
		{"overlap clamped below half", ChunkOptions{MaxTokens: 100, Overlap: 80}, 100, 49},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Split(input, tt.opts)
			if len(chunks) < 3 {
				t.Fatalf("got %d chunks, want several", len(chunks))
			}
			spans := locate(t, input, chunks, tt.max)
			for i, c := range chunks {
				if s := spans[i].start; s > 0 && norm[s-1] != ' ' && norm[s-1] != '\n' {
					t.Errorf("chunk %d starts mid-word: %q", i, c.Text[:min(30, len(c.Text))])
				}
				if !strings.HasSuffix(c.Text, ".") {
					t.Errorf("chunk %d does not end on a sentence boundary: ...%q", i, c.Text[max(0, len(c.Text)-30):])
				}
				if i == 0 {
					continue
				}
				ov := spans[i-1].end - spans[i].start
				if ov <= 0 {
					t.Errorf("chunk %d has no overlap with chunk %d", i, i-1)
					continue
				}
				if n := Tokens(norm[spans[i].start:spans[i-1].end]); n > tt.overlap || n*2 < tt.overlap {
					t.Errorf("chunk %d: overlap of %d tokens, want about %d", i, n, tt.overlap)
				}
			}
			// Every sentence is whole in some chunk, and sentences appear in order.
			last := 0
			for _, sentence := range strings.SplitAfter(strings.ReplaceAll(norm, "\n\n", " "), "operators care.") {
				sentence = strings.TrimSpace(sentence)
				if sentence == "" {
					continue
				}
				found := -1
				for i := last; i < len(chunks); i++ {
					if strings.Contains(chunks[i].Text, sentence) {
						found = i
						break
					}
				}
				if found < 0 {
					t.Fatalf("sentence missing or out of order: %q", sentence)
				}
				last = found
			}
		})
	}
}

func TestSplitPacksSmallParagraphs(t *testing.T) {
	input := "Alpha one.\n\nBravo two.\n\nCharlie three."
	chunks := Split(input, ChunkOptions{MaxTokens: 100, Overlap: 10})
	if len(chunks) != 1 || chunks[0].Text != input {
		t.Fatalf("Split = %+v, want one chunk with all three paragraphs", chunks)
	}
}

func TestSplitPrefersParagraphBoundary(t *testing.T) {
	// Paragraph 1 fills more than half a chunk; paragraph 2 is longer than
	// the rest of the chunk. The cut must fall between the paragraphs rather
	// than after the first sentences of paragraph 2.
	p1 := strings.Repeat("The first paragraph talks about one thing only. ", 8)
	p2 := strings.Repeat("Another paragraph goes on about a different matter. ", 12)
	input := strings.TrimSpace(p1) + "\n\n" + strings.TrimSpace(p2)
	chunks := Split(input, ChunkOptions{MaxTokens: 150, Overlap: -1})
	locate(t, input, chunks, 150)
	if chunks[0].Text != strings.TrimSpace(p1) {
		t.Fatalf("first chunk = %q, want exactly the first paragraph", chunks[0].Text)
	}
}

func TestSplitWhitespace(t *testing.T) {
	for _, in := range []string{"", " ", "\n\n\t \r\n", "\u00a0\u2003"} {
		if got := Split(in, ChunkOptions{}); got != nil {
			t.Errorf("Split(%q) = %v, want nil", in, got)
		}
	}
	got := Split("  Hello   world.\r\n\r\n\r\n\r\nSecond\t\tparagraph  here.  \n  next line ", ChunkOptions{})
	want := []Chunk{{Text: "Hello world.\n\nSecond paragraph here.\nnext line", Tokens: 9, Position: 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Split normalisation = %+v, want %+v", got, want)
	}
}

func TestSplitEnormousWord(t *testing.T) {
	word := "https://example.com/" + pseudoRandomWord(20000)
	input := "See this link: " + word + " for details."
	tests := []struct {
		name string
		opts ChunkOptions
		max  int
	}{
		{"small cap", ChunkOptions{MaxTokens: 100, Overlap: 20}, 100},
		{"defaults", ChunkOptions{}, 400},
		{"tiny cap raised to minimum", ChunkOptions{MaxTokens: 3}, minMaxTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Split(input, tt.opts)
			if len(chunks) < 2 {
				t.Fatalf("got %d chunks", len(chunks))
			}
			locate(t, input, chunks, tt.max)
			// Inside the word, chunks should be reasonably full.
			for i, c := range chunks[1 : len(chunks)-1] {
				if c.Tokens*10 < tt.max*7 {
					t.Errorf("chunk %d holds only %d tokens of %d", i+1, c.Tokens, tt.max)
				}
			}
		})
	}
}

func TestSplitCJK(t *testing.T) {
	var sentences []string
	for i := range 60 {
		sentences = append(sentences, fmt.Sprintf("这是第%d个测试句子，用于检验中文文本在没有空格的情况下能否正确分块。", i))
	}
	withStops := strings.Join(sentences, "")
	noStops := pseudoRandom(1500, []rune("日本語の文章には単語の間に空白がありませんそして句読点もない漢字仮名"))
	t.Run("sentence ends", func(t *testing.T) {
		chunks := Split(withStops, ChunkOptions{MaxTokens: 120, Overlap: 30})
		if len(chunks) < 3 {
			t.Fatalf("got %d chunks", len(chunks))
		}
		spans := locate(t, withStops, chunks, 120)
		for i, c := range chunks {
			// Sentences are longer than the overlap, so the overlap starts
			// at a clause.
			if s := spans[i].start; s > 0 && !strings.HasSuffix(withStops[:s], "。") && !strings.HasSuffix(withStops[:s], "，") {
				t.Errorf("chunk %d does not start at a sentence or clause: %q", i, c.Text[:30])
			}
			if !strings.HasSuffix(c.Text, "。") {
				t.Errorf("chunk %d does not end at a sentence: %q", i, c.Text)
			}
			if i > 0 && spans[i].start >= spans[i-1].end {
				t.Errorf("chunk %d has no overlap", i)
			}
		}
	})
	t.Run("no punctuation", func(t *testing.T) {
		chunks := Split(noStops, ChunkOptions{MaxTokens: 64, Overlap: 16})
		if len(chunks) < 3 {
			t.Fatalf("got %d chunks", len(chunks))
		}
		locate(t, noStops, chunks, 64)
	})
}

func TestSplitOptions(t *testing.T) {
	tests := []struct {
		name        string
		opts        ChunkOptions
		max, overlp int
	}{
		{"zero means defaults", ChunkOptions{}, 400, 60},
		{"negative max means default", ChunkOptions{MaxTokens: -5}, 400, 60},
		{"tiny max raised", ChunkOptions{MaxTokens: 1}, 16, 7},
		{"negative overlap disables", ChunkOptions{MaxTokens: 200, Overlap: -1}, 200, 0},
		{"overlap at half is lowered", ChunkOptions{MaxTokens: 200, Overlap: 100}, 200, 99},
		{"valid overlap kept", ChunkOptions{MaxTokens: 200, Overlap: 99}, 200, 99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxTokens, overlap := tt.opts.resolve()
			if maxTokens != tt.max || overlap != tt.overlp {
				t.Errorf("resolve() = %d, %d; want %d, %d", maxTokens, overlap, tt.max, tt.overlp)
			}
		})
	}

	input := prose(20)
	chunks := Split(input, ChunkOptions{MaxTokens: 150, Overlap: -1})
	spans := locate(t, input, chunks, 150)
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			t.Errorf("chunk %d overlaps although overlap is disabled", i)
		}
	}
}

func TestSplitDeterministic(t *testing.T) {
	input := prose(25) + "\n\n" + pseudoRandomWord(3000) + "\n\n" + strings.Repeat("中文句子。", 200)
	first := Split(input, ChunkOptions{MaxTokens: 90, Overlap: 20})
	for range 3 {
		if again := Split(input, ChunkOptions{MaxTokens: 90, Overlap: 20}); !reflect.DeepEqual(first, again) {
			t.Fatal("Split is not deterministic")
		}
	}
}

func TestSplitGoMemoryModel(t *testing.T) {
	path := filepath.Join(runtime.GOROOT(), "doc", "go_mem.html")
	body, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("Go distribution without docs: %v", err)
	}
	page, err := ExtractHTML(body, "text/html; charset=utf-8", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The Go memory model specifies the conditions", "Don't be clever.", "happens before"} {
		if !strings.Contains(page.Text, want) {
			t.Errorf("extracted text lacks %q", want)
		}
	}
	if strings.Contains(page.Text, "font-style") {
		t.Error("extracted text contains the inline style sheet")
	}
	chunks := Split(page.Text, ChunkOptions{})
	if total := Tokens(page.Text); len(chunks) < total/400 || len(chunks) > total/150 {
		t.Errorf("%d chunks for %d tokens", len(chunks), total)
	}
	norm := normalizeSpace(page.Text)
	spans := locate(t, page.Text, chunks, defaultMaxTokens)
	for i, s := range spans {
		if s.start > 0 && norm[s.start-1] != ' ' && norm[s.start-1] != '\n' {
			t.Errorf("chunk %d starts mid-word: %q", i, chunks[i].Text[:40])
		}
		if i > 0 && s.start >= spans[i-1].end {
			t.Errorf("chunk %d has no overlap", i)
		}
	}
}

// TestSplitTokensExact checks the token count of every chunk of real
// documents against tiktoken-go's encoding of the chunk's text (in locate):
// the counts users see are exact, however Split counted on the way.
func TestSplitTokensExact(t *testing.T) {
	texts := realTexts(t)
	var chinese strings.Builder
	for i := range 300 {
		fmt.Fprintf(&chinese, "这是第%d个用于检验分块的中文句子，它没有空格。", i)
	}
	texts["chinese"] = chinese.String()
	for _, name := range []string{"go_spec text", "doc/go_mem.html", "doc/godebug.md", "src/strings/strings_test.go", "chinese"} {
		for _, opts := range []ChunkOptions{{}, {MaxTokens: 100, Overlap: 20}} {
			t.Run(fmt.Sprintf("%s %d", name, opts.MaxTokens), func(t *testing.T) {
				maxTokens, _ := opts.resolve()
				chunks := Split(texts[name], opts)
				if len(chunks) < 3 {
					t.Fatalf("%d chunks", len(chunks))
				}
				locate(t, texts[name], chunks, maxTokens)
			})
		}
	}
}

// SplitTokens answers what Split and Tokens do, the count exact (tiktoken-go's encoding) also
// for texts Split changes (whitespace) and texts on the edges of pre-tokenisation.
func TestSplitTokens(t *testing.T) {
	texts := realTexts(t)
	texts["messy whitespace"] = "  Line one.\r\n\r\n\r\n\tLine   two  \n\n\n x"
	for i, s := range edgeTexts {
		texts[fmt.Sprintf("edge %d", i)] = s
	}
	for name, s := range texts {
		chunks, n := SplitTokens(s, ChunkOptions{})
		if want := len(encode(s)); n != want {
			t.Errorf("%s: %d tokens, want %d", name, n, want)
		}
		if want := Split(s, ChunkOptions{}); !reflect.DeepEqual(chunks, want) {
			t.Errorf("%s: %d chunks differ from Split's %d", name, len(chunks), len(want))
		}
	}
}
