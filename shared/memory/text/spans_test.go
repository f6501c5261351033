package text

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkSpans compares spans' count of parts of s with counter's count of the part alone: of
// every part if all, else of the whole and random parts of up to 1000 characters.
func checkSpans(t *testing.T, name, s string, all bool, random int) {
	t.Helper()
	s = strings.ToValidUTF8(s, "\uFFFD")
	var direct counter
	sp := newSpans(s, &counter{})
	check := func(a, b int) {
		t.Helper()
		if got, want := sp.tokens(a, b), direct.tokens(s[a:b]); got != want {
			t.Fatalf("%s: tokens of [%d:%d] %.60q: %d, alone %d", name, a, b, s[a:b], got, want)
		}
	}
	var bounds []int
	for i := range s {
		bounds = append(bounds, i)
	}
	bounds = append(bounds, len(s))
	if all {
		for i, a := range bounds {
			for _, b := range bounds[i:] {
				check(a, b)
			}
		}
	}
	check(0, len(s))
	r := rand.New(rand.NewPCG(1, uint64(len(s))))
	for range random {
		i := r.IntN(len(bounds))
		j := min(len(bounds)-1, i+r.IntN(1000))
		check(bounds[i], bounds[j])
	}
}

// Counting a part of a text with the text's pieces (spans, which Split counts with) gives the
// count of the part alone, where the part starts or ends inside a piece of the text, in white
// space, or next to a contraction, a number or a long word.
func TestSpansMatchCounter(t *testing.T) {
	texts := realTexts(t)
	texts["long word"] = "a " + strings.Repeat("x", 3000) + " b " + strings.Repeat("é", 1500) + "."
	for name, s := range texts {
		checkSpans(t, name, s, false, 2000)
		checkSpans(t, name+" normalised", normalizeSpace(s), false, 2000)
	}
	for i, s := range edgeTexts {
		checkSpans(t, fmt.Sprintf("edge %d", i), s, true, 0)
	}
	checkSpans(t, "run of white space before a symbol", "x  \t$ a  b\n \n c", true, 0)
}

func FuzzSpans(f *testing.F) {
	for _, s := range edgeTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSpans(t, "fuzz", s, utf8.RuneCountInString(s) <= 100, 500)
	})
}
