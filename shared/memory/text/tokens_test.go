package text

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"hello world", "hello world", 2},
		{"openai cookbook example", "tiktoken is great!", 6},
		{"sentence", "The Go memory model specifies the conditions.", 8},
		{"url", "https://example.com/a/b?c=d#e", 11},
		{"japanese", "こんにちは世界。", 5},
		{"special token marker is ordinary text", "<|endoftext|>", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tokens(tt.in); got != tt.want {
				t.Errorf("Tokens(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestTokensConcurrent(t *testing.T) {
	// Pinned counts, not computed first, so that the parallel calls may be
	// the ones that load the encoder.
	tests := map[string]int{
		"hello world":        2,
		"tiktoken is great!": 6,
		"こんにちは世界。":           5,
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				for in, want := range tests {
					if got := Tokens(in); got != want {
						t.Errorf("Tokens(%q) = %d concurrently, want %d", in, got, want)
					}
				}
			}
		})
	}
	wg.Wait()
}

// realTexts returns documents of the Go distribution to compare counts on:
// the specification's text and raw HTML, Markdown, and Go test files that
// hold many scripts, invalid UTF-8 and unusual white space.
func realTexts(t testing.TB) map[string]string {
	t.Helper()
	root := runtime.GOROOT()
	files := []string{
		"doc/go_spec.html", "doc/go_mem.html", "doc/godebug.md",
		"src/strings/strings_test.go", "src/unicode/utf8/utf8_test.go", "src/go/doc/synopsis_test.go",
		"src/net/http/cookiejar/punycode_test.go", "src/html/template/exec_test.go",
	}
	texts := make(map[string]string)
	for _, f := range files {
		body, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Skipf("Go distribution without its docs and sources: %v", err)
		}
		texts[f] = string(body)
	}
	page, err := ExtractHTML([]byte(texts["doc/go_spec.html"]), "text/html", nil)
	if err != nil {
		t.Fatal(err)
	}
	texts["go_spec text"] = page.Text
	return texts
}

// edgeTexts are strings on the edges of cl100k_base's pre-tokenisation.
var edgeTexts = []string{
	"", " ", "  ", "a  b", "a  1", "a \t b", "x\n\n\ny", " \n \n x", "\r\n\r\n", "a\r\n\tb", "end.  ", "1234567", "12 345",
	"I'M HERE, YOU'RE THERE, WE'LL'VE 'S 'T 'D 'Ll 'x 're", "'Sound 'Tree 'REd 'LLama 'VEry 'Dog 'Mom", "don't'", "'", "''s", "\u00a0word\u00a0 \u00a0", "a\u2028b\u3000 c",
	"naïve café résumé", "e\u0301te\u0301", "ⅩⅡ ½ ²³ ٣٤٥", "こんにちは世界。", "😀 👍🏽 a😀b", "<|endoftext|>", "\x00\x01\x1f",
	"\xff\xfe abc", "a\xc3", "\xe2\x82 b", "tab\tsep\vand\fform", "$$$ !!! ...\n\n", " .\n", "ſ 'ſ 'K",
}

func TestTokensMatchesTiktoken(t *testing.T) {
	check := func(name, s string) {
		t.Helper()
		if got, want := Tokens(s), len(encode(s)); got != want {
			t.Errorf("%s: Tokens(%.40q...) = %d, tiktoken-go counts %d", name, s, got, want)
		}
	}
	for _, s := range edgeTexts {
		check("edge", s)
	}
	for name, text := range realTexts(t) {
		check(name, text)
		for i, line := range strings.Split(text, "\n") {
			check(fmt.Sprintf("%s line %d", name, i+1), line)
		}
	}
}

// The byte-pair merge counts each piece of real texts as tiktoken-go's encoding does, by
// scanning the parts as by taking pairs from a queue.
func TestMergedPartsMatchTiktoken(t *testing.T) {
	seen := map[string]bool{}
	for name, text := range realTexts(t) {
		for _, p := range scannedPieces(strings.ToValidUTF8(text, "\uFFFD")) {
			if seen[p] {
				continue
			}
			seen[p] = true
			want := len(encode(p))
			if got := mergedParts(p, ranks()); got != want {
				t.Errorf("%s: piece %q: %d parts, tiktoken-go encodes %d tokens", name, p, got, want)
			}
			if got, _ := queueMerge(p, ranks()); got != want {
				t.Errorf("%s: piece %q: %d parts merged from the queue, tiktoken-go encodes %d tokens", name, p, got, want)
			}
		}
	}
}

// A word with no space is one piece however long; its byte-pair merge takes a bounded number
// of steps per byte (at most three pairs from its queue), so that its cost grows with its
// length, not with its square, and counts what tiktoken-go encodes.
func TestMergedPartsOfLongWords(t *testing.T) {
	for _, c := range []struct {
		name  string
		piece string
		exact bool // compared with tiktoken-go, whose merge is quadratic: kept short
	}{
		{"letters", pseudoRandom(3000, []rune("abcdefghijklmnopqrstuvwxyz")), true},
		{"repeated", strings.Repeat("abcdefgh", 500), true},
		{"one letter", strings.Repeat("a", 3001), true},
		{"accented", pseudoRandom(1000, []rune("éàüßøçñ")), true},
		{"32000 letters", pseudoRandom(32000, []rune("abcdefghijklmnopqrstuvwxyz")), false},
		{"32000 repeated", strings.Repeat("abcdefgh", 4000), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if p := scannedPieces(c.piece); len(p) != 1 {
				t.Fatalf("the word is %d pieces, want one", len(p))
			}
			parts, steps := merge(c.piece, ranks())
			if steps > 3*len(c.piece) {
				t.Errorf("the merge of %d bytes took %d steps, want at most %d", len(c.piece), steps, 3*len(c.piece))
			}
			if parts < 1 || parts > len(c.piece) {
				t.Errorf("%d parts of %d bytes", parts, len(c.piece))
			}
			if c.exact {
				if want := len(encode(c.piece)); parts != want {
					t.Errorf("%d parts, tiktoken-go encodes %d tokens", parts, want)
				}
			}
		})
	}
}

// regexpPieces cuts s with cl100kPattern as tiktoken-go does, with regexp2.
func regexpPieces(t testing.TB, s string) []string {
	t.Helper()
	re := regexp2.MustCompile(cl100kPattern, regexp2.None)
	var pieces []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		pieces = append(pieces, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return pieces
}

// scannedPieces cuts valid UTF-8 s with pieceEnd.
func scannedPieces(s string) []string {
	var pieces []string
	for i := 0; i < len(s); {
		j := pieceEnd(s, i)
		pieces = append(pieces, s[i:j])
		i = j
	}
	return pieces
}

func TestPiecesMatchRegexp(t *testing.T) {
	texts := realTexts(t)
	for i, s := range edgeTexts {
		texts[fmt.Sprintf("edge %d", i)] = s
	}
	// Characters in contexts that tell letters, numbers, white space,
	// symbols and contractions apart: every one up to U+3100 (ASCII, which
	// pieceEnd classifies itself, and every white space character), then
	// every 16th of the Basic Multilingual Plane (both sides use the tables
	// of package unicode).
	contexts := []string{"x%c", "x%c1", " %c.", "\n%c ", "'%cx", "'%ce ", "'%cl "}
	var b strings.Builder
	for r := rune(0); r < 0x10000; r++ {
		if utf8.ValidRune(r) && (r < 0x3100 || r%16 == 0) {
			for _, c := range contexts {
				fmt.Fprintf(&b, c, r)
			}
		}
	}
	texts["every character"] = b.String()
	for name, s := range texts {
		s = strings.ToValidUTF8(s, "\uFFFD")
		if got, want := scannedPieces(s), regexpPieces(t, s); !reflect.DeepEqual(got, want) {
			for k := range min(len(got), len(want)) {
				if got[k] != want[k] {
					t.Errorf("%s: piece %d is %q, the regexp's is %q", name, k, got[k], want[k])
					break
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d pieces, the regexp finds %d", name, len(got), len(want))
			}
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range edgeTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Tokens(s), len(encode(s)); got != want {
			t.Fatalf("Tokens(%q) = %d, tiktoken-go counts %d", s, got, want)
		}
		valid := strings.ToValidUTF8(s, "\uFFFD")
		if got, want := scannedPieces(valid), regexpPieces(t, valid); !reflect.DeepEqual(got, want) {
			t.Fatalf("pieces of %q: %q, the regexp's %q", valid, got, want)
		}
	})
}

// BenchmarkTokens counts the tokens of the Go specification's text (about
// 220 KB); SetBytes makes `go test` report MB/s.
func BenchmarkTokens(b *testing.B) {
	s := realTexts(b)["go_spec text"]
	Tokens("warm up: load the vocabulary")
	b.SetBytes(int64(len(s)))
	for range b.N {
		Tokens(s)
	}
}

// BenchmarkTokensOfOneWord counts the tokens of a 32,000-byte text written as one word and as
// words of seven letters: a chat message or a document may hold either.
func BenchmarkTokensOfOneWord(b *testing.B) {
	Tokens("warm up: load the vocabulary")
	word := pseudoRandom(32000, []rune("abcdefghijklmnopqrstuvwxyz"))
	words := []rune(word)
	for i := 7; i < len(words); i += 8 {
		words[i] = ' '
	}
	for _, c := range []struct{ name, s string }{{"words", string(words)}, {"word", word}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for range b.N {
				Tokens(c.s)
			}
		})
	}
}
