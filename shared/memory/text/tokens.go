package text

import (
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// cl100kPattern is the pre-tokenisation regular expression of cl100k_base,
// as published by OpenAI's tiktoken.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var (
	encoderOnce sync.Once
	encoderBPE  *tiktoken.Tiktoken
	// encoderRanks is the vocabulary: a piece found in it is one token.
	encoderRanks map[string]int
)

// encoder returns the cl100k_base encoder, building it on first use from the
// vocabulary embedded in tiktoken-go-loader. The encoder is built directly
// rather than through tiktoken.SetBpeLoader so that the package never mutates
// the tiktoken package's global loader.
func encoder() *tiktoken.Tiktoken {
	encoderOnce.Do(func() {
		enc, ranks, err := newCL100K()
		if err != nil {
			// The vocabulary is embedded in the binary, so this can only
			// happen if the dependency itself is broken.
			panic(fmt.Sprintf("text: load cl100k_base: %v", err))
		}
		encoderBPE, encoderRanks = enc, ranks
	})
	return encoderBPE
}

func newCL100K() (*tiktoken.Tiktoken, map[string]int, error) {
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		return nil, nil, fmt.Errorf("read vocabulary: %w", err)
	}
	special := map[string]int{
		tiktoken.ENDOFTEXT:   100257,
		tiktoken.FIM_PREFIX:  100258,
		tiktoken.FIM_MIDDLE:  100259,
		tiktoken.FIM_SUFFIX:  100260,
		tiktoken.ENDOFPROMPT: 100276,
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, special, cl100kPattern)
	if err != nil {
		return nil, nil, fmt.Errorf("build encoder: %w", err)
	}
	specialSet := make(map[string]any, len(special))
	for k := range special {
		specialSet[k] = true
	}
	encoding := &tiktoken.Encoding{
		Name:           tiktoken.MODEL_CL100K_BASE,
		PatStr:         cl100kPattern,
		MergeableRanks: ranks,
		SpecialTokens:  special,
	}
	return tiktoken.NewTiktoken(bpe, encoding, specialSet), ranks, nil
}

// Tokens counts the tokens of s with the cl100k_base encoding (the encoding
// of GPT-4, GPT-3.5 and the text-embedding-3 models). Special-token markers
// such as "<|endoftext|>" are counted as ordinary text, and each byte of
// invalid UTF-8 as U+FFFD. The vocabulary is loaded once, offline, on first
// use; Tokens is safe for concurrent use.
func Tokens(s string) int {
	var c counter
	return c.tokens(s)
}

// counter counts cl100k_base tokens as tiktoken-go does, but cuts texts into
// pieces itself (pieceEnd) rather than with tiktoken-go's regexp, which took
// most of the time, and remembers the count of every piece it met: only a
// piece it has not met yet is looked up in the vocabulary, and only one that
// is not a token goes through tiktoken-go's BPE. The zero counter is ready;
// it is not safe for concurrent use.
type counter struct {
	pieces map[string]int
}

// tokens counts the tokens of s.
func (c *counter) tokens(s string) int {
	if s == "" {
		return 0
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	n := 0
	for i := 0; i < len(s); {
		j := pieceEnd(s, i)
		n += c.piece(s[i:j])
		i = j
	}
	return n
}

// piece counts the tokens of one piece.
func (c *counter) piece(p string) int {
	if n, ok := c.pieces[p]; ok {
		return n
	}
	if c.pieces == nil {
		c.pieces = make(map[string]int)
	}
	n := mergedParts(p, ranks())
	c.pieces[p] = n
	return n
}

// mergedParts returns how many tokens cl100k_base's byte-pair merge makes of piece with the
// vocabulary ranks: while two neighbouring parts make a token, the pair of the lowest rank
// becomes one part (of equal ranks, the leftmost). It makes the merges tiktoken-go's
// bytePairMerge makes, counting parts rather than naming them, without the pre-tokenisation
// tiktoken-go's EncodeOrdinary runs again on the piece.
func mergedParts(piece string, ranks map[string]int) int {
	n, _ := merge(piece, ranks)
	return n
}

// merge returns mergedParts and the steps it took: the parts it looked at to find each merge.
// A piece of up to shortPiece bytes, nearly every piece of a text, is merged as tiktoken-go
// does (scanMerge); a longer one, such as a word of thousands of letters with no space, by
// queueMerge, whose cost grows with the length and not with its square.
func merge(piece string, ranks map[string]int) (parts, steps int) {
	if _, ok := ranks[piece]; ok || len(piece) < 2 {
		return 1, 0
	}
	if len(piece) > shortPiece {
		return queueMerge(piece, ranks)
	}
	return scanMerge(piece, ranks)
}

// shortPiece is the length up to which merge scans the parts for each merge: at most
// shortPiece²/2 steps for a piece, shortPiece/2 per byte of a text.
const shortPiece = 256

// scanMerge merges as tiktoken-go's bytePairMerge does: each merge scans every part for the
// pair of the lowest rank and moves the parts that follow it, so it takes up to n²/2 steps
// for a piece of n bytes.
func scanMerge(piece string, ranks map[string]int) (int, int) {
	steps := 0
	const none = math.MaxInt
	// parts[k] is where part k starts and the rank of part k joined with part k+1.
	type part struct{ start, rank int }
	parts := make([]part, len(piece)+1)
	for i := range parts {
		parts[i] = part{i, none}
	}
	// rank returns the rank of parts i to i+skip+1 joined, or none.
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := ranks[piece[parts[i].start:parts[i+skip+2].start]]; ok {
				return r
			}
		}
		return none
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		low, i := none, -1
		steps += len(parts) - 1
		for k := 0; k < len(parts)-1; k++ {
			if parts[k].rank < low {
				low, i = parts[k].rank, k
			}
		}
		if i < 0 {
			break
		}
		parts[i].rank = rank(i, 1)
		if i > 0 {
			parts[i-1].rank = rank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1, steps
}

// queueMerge makes scanMerge's merges in O(n log n) time for a piece of n bytes: the parts
// are a linked list and the pairs that make a token a heap ordered by rank, then position; a
// pair made stale by a merge beside it is skipped when it comes out. Each merge pushes at
// most two pairs, so the steps, the pairs taken from the heap, are at most 3n. (tiktoken-go's
// scan made one word of 32,000 letters, one piece, take seconds of CPU.)
func queueMerge(piece string, ranks map[string]int) (parts, steps int) {
	n := len(piece)
	// Part k starts at byte k while it lives; at[k] holds where the part after it starts (n
	// after the last), where the one before it starts (-1 before the first) and the rank of
	// the two joined (none when they make no token).
	at, q := make([]link, n), make(pairQueue, 0, n)
	const none = -1
	// pair returns the rank of part k joined with the part after it, or none.
	pair := func(k int) int {
		if j := at[k].next; j < n {
			if r, ok := ranks[piece[k:at[j].next]]; ok {
				return r
			}
		}
		return none
	}
	for k := range n {
		at[k] = link{next: k + 1, prev: k - 1, rank: none}
	}
	for k := range n - 1 {
		if at[k].rank = pair(k); at[k].rank != none {
			q.push(candidate{at[k].rank, k})
		}
	}
	parts = n
	for len(q) > 0 {
		c := q.pop()
		steps++
		if at[c.start].rank != c.rank {
			continue // a merge beside it changed the pair, or merged its part away
		}
		k, j := c.start, at[c.start].next
		at[k].next = at[j].next
		if at[k].next < n {
			at[at[k].next].prev = k
		}
		at[j].rank = none
		parts--
		if at[k].rank = pair(k); at[k].rank != none {
			q.push(candidate{at[k].rank, k})
		}
		if p := at[k].prev; p >= 0 {
			if at[p].rank = pair(p); at[p].rank != none {
				q.push(candidate{at[p].rank, p})
			}
		}
	}
	return parts, steps
}

// link is a part of queueMerge's list.
type link struct{ next, prev, rank int }

// candidate is a pair of neighbouring parts that make a token: the first part's start and
// the token's rank.
type candidate struct{ rank, start int }

// pairQueue is a binary min-heap of candidates, by rank then start.
type pairQueue []candidate

func (c candidate) before(d candidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.start < d.start
}

func (q *pairQueue) push(c candidate) {
	h := append(*q, c)
	for i := len(h) - 1; i > 0; {
		up := (i - 1) / 2
		if !h[i].before(h[up]) {
			break
		}
		h[i], h[up] = h[up], h[i]
		i = up
	}
	*q = h
}

func (q *pairQueue) pop() candidate {
	h := *q
	top, last := h[0], len(h)-1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		low := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(h) && h[c].before(h[low]) {
				low = c
			}
		}
		if low == i {
			break
		}
		h[i], h[low] = h[low], h[i]
		i = low
	}
	*q = h
	return top
}

// ranks returns the cl100k_base vocabulary: a piece found in it is one token.
func ranks() map[string]int {
	encoder()
	return encoderRanks
}

// encode returns the cl100k_base token ids of s, treating special-token
// markers as ordinary text.
func encode(s string) []int {
	return encoder().EncodeOrdinary(s)
}

// decode returns the text of the given token ids.
func decode(tokens []int) string {
	return encoder().Decode(tokens)
}
