package text

import "slices"

// spans counts the tokens of substrings of one text, each in a time that does not grow with its
// length. The text is cut into pieces (pieceEnd) and counted once; a substring that starts where
// a piece of the text starts shares the text's pieces up to near its end, so its count is the
// text's count between the two, found by subtraction, plus the count of its own first pieces
// (those before it meets a piece start of the text) and last ones (those whose cut looked
// further than its end). The counts are the exact counts of the substrings, as counter's.
type spans struct {
	s     string
	count *counter
	// starts holds where each piece of s starts, then len(s).
	starts []int
	// before[k] is the tokens of the pieces before piece k; long[k] how many of them are longer
	// than longRun, which are not counted up front (the BPE merge is quadratic in a piece's
	// length) and count only in a substring that holds them.
	before, long []int
}

// newSpans cuts s, valid UTF-8, into its pieces and counts them with count.
func newSpans(s string, count *counter) *spans {
	sp := &spans{s: s, count: count}
	n, nLong := 0, 0
	for i := 0; i < len(s); {
		j := pieceEnd(s, i)
		sp.starts, sp.before, sp.long = append(sp.starts, i), append(sp.before, n), append(sp.long, nLong)
		if j-i > longRun {
			nLong++
		} else {
			n += count.piece(s[i:j])
		}
		i = j
	}
	sp.starts, sp.before, sp.long = append(sp.starts, len(s)), append(sp.before, n), append(sp.long, nLong)
	return sp
}

// tokens returns the tokens of s[a:b]; a and b are character boundaries.
func (sp *spans) tokens(a, b int) int {
	n := 0
	k, _ := slices.BinarySearch(sp.starts, a)
	for a < b && sp.starts[k] != a {
		a, n = sp.own(a, b, n)
		for sp.starts[k] < a {
			k++
		}
	}
	last, found := slices.BinarySearch(sp.starts, b)
	if !found {
		last--
	}
	for last > k && !sp.settled(sp.starts[last], b) {
		last--
	}
	if last > k {
		if sp.long[last] == sp.long[k] {
			n += sp.before[last] - sp.before[k]
		} else {
			for m := k; m < last; m++ {
				n += sp.count.piece(sp.s[sp.starts[m]:sp.starts[m+1]])
			}
		}
		a = sp.starts[last]
	}
	for a < b {
		a, n = sp.own(a, b, n)
	}
	return n
}

// own counts the piece of s[:b] at a, adding its tokens to n; it returns where the piece ends
// and the sum.
func (sp *spans) own(a, b, n int) (int, int) {
	end := a + pieceEnd(sp.s[a:b], 0)
	return end, n + sp.count.piece(sp.s[a:end])
}

// settled reports whether the pieces of s that end by e are also the pieces of s[:b] (b >= e):
// the cut of a piece looks at most one character past its end, or, where white space follows
// it, at the whole run of white space and the character after it; past the end of s, nothing
// differs.
func (sp *spans) settled(e, b int) bool {
	s := sp.s
	if b == len(s) {
		return true
	}
	for e < len(s) {
		r, size := decodeRune(s, e)
		e += size
		if !isSpace(r) {
			return e <= b
		}
	}
	return false
}
