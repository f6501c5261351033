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
// becomes one part. It is tiktoken-go's bytePairMerge, counting parts rather than naming them,
// without the pre-tokenisation tiktoken-go's EncodeOrdinary runs again on the piece.
func mergedParts(piece string, ranks map[string]int) int {
	if _, ok := ranks[piece]; ok || len(piece) < 2 {
		return 1
	}
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
	return len(parts) - 1
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
