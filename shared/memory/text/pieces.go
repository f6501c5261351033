package text

import (
	"unicode"
	"unicode/utf8"
)

// pieceEnd returns where the piece of s that starts at byte i ends: the match
// that cl100k_base's pre-tokenisation regexp (cl100kPattern, as run by
// dlclark/regexp2 under tiktoken-go) finds at i. BPE merges never cross the
// end of a piece, so a text's tokens are the tokens of its pieces, each
// encoded alone. s must be valid UTF-8 and i < len(s).
//
// The alternatives of cl100kPattern are tried in order, as the regexp does,
// each written as what its backtracking search ends up matching:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)  a contraction
//	[^\r\n\p{L}\p{N}]?\p{L}+      letters, after at most one other character
//	\p{N}{1,3}                    up to three digits
//	 ?[^\s\p{L}\p{N}]+[\r\n]*     symbols, after at most one space, with the line breaks that follow
//	\s*[\r\n]+                    white space up to its last line break
//	\s+(?!\S)                     white space but its last character, unless it ends s
//	\s+                           white space
//
// \s, \p{L} and \p{N} are unicode.IsSpace, IsLetter and IsNumber, the
// tables regexp2 uses.
func pieceEnd(s string, i int) int {
	r, size := decodeRune(s, i)
	if r == '\'' {
		if n := contraction(s[i+1:]); n > 0 {
			return i + 1 + n
		}
	}
	if isLetter(r) {
		return letters(s, i+size)
	}
	if r != '\r' && r != '\n' && !isNumber(r) && i+size < len(s) {
		if next, _ := decodeRune(s, i+size); isLetter(next) {
			return letters(s, i+size)
		}
	}
	if isNumber(r) {
		return numbers(s, i)
	}
	j := i
	if r == ' ' && i+1 < len(s) {
		if next, _ := decodeRune(s, i+1); isSymbol(next) {
			j = i + 1
		}
	}
	if isSymbol(r) || j > i {
		return lineBreaks(s, symbols(s, j))
	}
	return spaces(s, i)
}

// contraction returns the length of the contraction suffix s starts with
// ("s", "t", "re", "ve", "m", "ll" or "d", in any case), or 0. Only ASCII
// letters lower-case to these letters.
func contraction(s string) int {
	lower := func(k int) byte {
		if k < len(s) {
			return s[k] | 0x20
		}
		return 0
	}
	switch lower(0) {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if lower(1) == 'e' {
			return 2
		}
	case 'l':
		if lower(1) == 'l' {
			return 2
		}
	}
	return 0
}

// letters returns the end of the run of letters starting at i.
func letters(s string, i int) int {
	for i < len(s) {
		r, size := decodeRune(s, i)
		if !isLetter(r) {
			break
		}
		i += size
	}
	return i
}

// numbers returns the end of the run of at most three numeric characters
// starting at i.
func numbers(s string, i int) int {
	for range 3 {
		if i >= len(s) {
			break
		}
		r, size := decodeRune(s, i)
		if !isNumber(r) {
			break
		}
		i += size
	}
	return i
}

// symbols returns the end of the run of symbols starting at i.
func symbols(s string, i int) int {
	for i < len(s) {
		r, size := decodeRune(s, i)
		if !isSymbol(r) {
			break
		}
		i += size
	}
	return i
}

// lineBreaks returns the end of the run of "\r" and "\n" starting at i.
func lineBreaks(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// spaces returns the end of the piece of white space starting at i: up to
// and including its last line break if it has one, else all of it if it ends
// s or is a single character, else all of it but its last character (which
// starts the next piece, as in " word").
func spaces(s string, i int) int {
	end, lastBreak, last := i, -1, i
	for end < len(s) {
		r, size := decodeRune(s, end)
		if !isSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastBreak = end
		}
		last = end
		end += size
	}
	switch {
	case lastBreak >= 0:
		return lastBreak + 1
	case end == len(s) || last == i:
		return end
	}
	return last
}

// decodeRune decodes the character at byte i of s, ASCII first.
func decodeRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r|0x20 && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

// isSymbol reports whether r is in [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }
