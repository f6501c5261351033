package text

import (
	"cmp"
	"slices"
)

// spans counts the tokens of substrings of one text, each in a time that does not grow with its
// length. The text is cut into pieces (pieceEnd) and counted once; a substring that starts where
// a piece of the text starts shares the text's pieces up to near its end, so its count is the
// text's count between the two, found by subtraction, plus the count of its own first pieces
// (those before it meets a piece start of the text) and last ones (those whose cut looked
// further than its end). The counts are the exact counts of the substrings, as counter's.
type spans struct {
	s     string
	count *counter
	// pieces holds where each piece of s starts and the tokens of the pieces before it, then
	// len(s) and the tokens of all.
	pieces []spanPiece
	// long holds the indexes of the pieces longer than longRun, which are not counted up front
	// (the BPE merge is quadratic in a piece's length) and count only in a part that holds them.
	long []int
}

type spanPiece struct{ start, before int32 }

// newSpans cuts s, valid UTF-8 of less than 2 GB, into its pieces and counts them with count.
func newSpans(s string, count *counter) *spans {
	// About four bytes a piece in English prose.
	sp := &spans{s: s, count: count, pieces: make([]spanPiece, 0, len(s)/4+2)}
	n := 0
	for i := 0; i < len(s); {
		j := pieceEnd(s, i)
		sp.pieces = append(sp.pieces, spanPiece{int32(i), int32(n)})
		if j-i > longRun {
			sp.long = append(sp.long, len(sp.pieces)-1)
		} else {
			n += count.piece(s[i:j])
		}
		i = j
	}
	sp.pieces = append(sp.pieces, spanPiece{int32(len(s)), int32(n)})
	return sp
}

// find returns the index of the first piece that starts at or after offset i, and whether it
// starts at i.
func (sp *spans) find(i int) (int, bool) {
	return slices.BinarySearchFunc(sp.pieces, int32(i), func(p spanPiece, i int32) int { return cmp.Compare(p.start, i) })
}

// start returns where piece k starts.
func (sp *spans) start(k int) int { return int(sp.pieces[k].start) }

// tokens returns the tokens of s[a:b]; a and b are character boundaries.
func (sp *spans) tokens(a, b int) int {
	n := 0
	k, _ := sp.find(a)
	for a < b && sp.start(k) != a {
		a, n = sp.own(a, b, n)
		for sp.start(k) < a {
			k++
		}
	}
	last, found := sp.find(b)
	if !found {
		last--
	}
	for last > k && !sp.settled(sp.start(last), b) {
		last--
	}
	if last > k {
		n += int(sp.pieces[last].before - sp.pieces[k].before)
		from, _ := slices.BinarySearch(sp.long, k)
		for _, m := range sp.long[from:] {
			if m >= last {
				break
			}
			n += sp.count.piece(sp.s[sp.start(m):sp.start(m+1)])
		}
		a = sp.start(last)
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
