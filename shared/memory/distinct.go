package memory

import (
	"unicode"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/memory/index"
)

const (
	// shingleWords is how many consecutive words make a shingle, the unit texts are compared by.
	shingleWords = 5
	// nearDuplicate is the share of a passage's shingles that better-ranked passages already
	// show at or above which the passage is a near-duplicate of them.
	nearDuplicate = 0.8
	// sample is how sparsely shingles are kept: comparing one in four keeps the cost low and the
	// share of shared shingles about the same.
	sample = 4
)

// Distinct searches segs for the q.Top best hits whose texts differ: a hit whose text (looked up
// by text; a hit it does not find is left out) is the same or nearly the same as the texts of
// better-ranked hits (at least nearDuplicate of its shingles of shingleWords words, lowercased,
// punctuation aside, are theirs) is collapsed into them, and the next hit takes its place. A page
// stored twice, or two copies of a document cut into overlapping chunks, fill one place, the
// best-ranked copy's.
func Distinct(segs []*index.Segment, q index.Query, text func(id string) (string, bool)) []index.Hit {
	top := max(q.Top, 1)
	for depth := 2 * top; ; depth *= 2 {
		q.Top = depth
		hits := index.Search(segs, q)
		shown := make(map[uint64]struct{})
		out := make([]index.Hit, 0, top)
		for _, h := range hits {
			if t, ok := text(h.ID); ok && fresh(shown, t) {
				if out = append(out, h); len(out) == top {
					return out
				}
			}
		}
		if len(hits) < depth {
			return out
		}
	}
}

// fresh reports whether less than nearDuplicate of text's shingles are in shown, and then adds
// them.
func fresh(shown map[uint64]struct{}, text string) bool {
	sh := shingles(text)
	seen := 0
	for _, s := range sh {
		if _, ok := shown[s]; ok {
			seen++
		}
	}
	if len(sh) == 0 || float64(seen) >= nearDuplicate*float64(len(sh)) {
		return false
	}
	for _, s := range sh {
		shown[s] = struct{}{}
	}
	return true
}

// shingles hashes each run of shingleWords consecutive words of text (lowercased, split at
// anything but letters and digits; a text shorter than that is one run) and keeps the first and
// one in sample of the others, chosen by hash so that the same runs are kept in every text.
func shingles(text string) []uint64 {
	const offset, prime = 14695981039346656037, 1099511628211 // FNV-1a
	words := make([]uint64, 0, len(text)/5)                   // about one word in five bytes
	h, in := uint64(offset), false
	for _, r := range text {
		switch {
		case 'A' <= r && r <= 'Z':
			r += 'a' - 'A'
		case r >= utf8.RuneSelf:
			r = unicode.ToLower(r)
		}
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			h, in = (h^uint64(r))*prime, true
		} else if in {
			words, h, in = append(words, h), offset, false
		}
	}
	if in {
		words = append(words, h)
	}
	if len(words) == 0 {
		return nil
	}
	var out []uint64
	for i := 0; i == 0 || i+shingleWords <= len(words); i++ {
		s := uint64(offset)
		for _, w := range words[i:min(i+shingleWords, len(words))] {
			s = (s ^ w) * prime
		}
		if s%sample == 0 || i == 0 {
			out = append(out, s)
		}
	}
	return out
}
