package index

import (
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/unicode/norm"
)

// maxTokenBytes bounds the length of an indexed token. Longer runs of letters
// and digits (base64 blobs, minified data) would only bloat the dictionary.
const maxTokenBytes = 64

// asciiWord marks the ASCII bytes that belong to words: letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// tokenizer splits text into raw tokens. It is the first half of the
// analyzer; term turns a raw token into an index term. Both indexing and
// queries go through scan followed by term, so they always agree.
type tokenizer struct {
	word     []byte // current non-CJK word, as written
	ascii    bool   // word holds only ASCII bytes
	compound []byte // lowercased concatenation of the hyphen-joined words so far
	joined   int    // number of words in compound
	prevCJK  rune   // last rune of the current CJK run, 0 when not in one
	cjkRun   int    // length of the current CJK run
	out      []byte // scratch for the token handed to emit
	tmp      []byte // scratch for folding non-ASCII words
}

// scan calls emit with every raw token of text, in order. A token is a
// maximal run of letters, digits and combining marks, lowercased, with Latin
// diacritics and compatibility forms folded away ("Café" → "cafe", "ﬁle" →
// "file"); an apostrophe between two letters stays inside the word so that
// the stemmer and the stopword list see "don't" and "go's".
//
// Some tokens overlap others and are flagged with part: an ASCII word made of
// several identifier parts is followed by its parts ("DefaultGODEBUG" also
// yields "default" and "godebug", "http2" yields "http" and "2"), and ASCII
// words joined by hyphens are followed by their concatenation ("built-in"
// also yields "builtin", "utf-8" "utf8"). Parts are index-side expansions:
// they are indexed, so that a query spelling a name as prose finds it written
// as code and the other way round, but they do not count in a doc's length
// and queries do not search for them, so that a query word is never counted
// twice.
//
// Runs of Han, Hiragana and Katakana, which are written without spaces, are
// emitted as overlapping rune bigrams ("東京都" → "東京", "京都"); a lone CJK
// rune is emitted as itself. The slice given to emit is only valid during the
// call.
func (t *tokenizer) scan(text string, emit func(tok []byte, part bool)) {
	t.word, t.ascii, t.compound, t.joined, t.prevCJK, t.cjkRun = t.word[:0], true, t.compound[:0], 0, 0, 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case asciiWord[c]:
				t.endCJK(emit)
				t.word = append(t.word, c)
			case c == '\'' && t.apostrophe(text, i):
				t.word = append(t.word, '\'')
			default:
				t.endWord(emit, c == '-' && i < len(text) && text[i] < utf8.RuneSelf && asciiWord[text[i]])
				t.endCJK(emit)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case isCJK(r):
			t.endWord(emit, false)
			if t.prevCJK != 0 {
				t.out = utf8.AppendRune(utf8.AppendRune(t.out[:0], t.prevCJK), r)
				emit(t.out, false)
			}
			t.prevCJK = r
			t.cjkRun++
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			t.endCJK(emit)
			t.word = utf8.AppendRune(t.word, r)
			t.ascii = false
		case r == '’' && t.apostrophe(text, i):
			t.word = append(t.word, '\'')
		default:
			t.endWord(emit, false)
			t.endCJK(emit)
		}
	}
	t.endWord(emit, false)
	t.endCJK(emit)
}

// apostrophe reports whether an apostrophe that ends just before text[next]
// joins two letters of one word.
func (t *tokenizer) apostrophe(text string, next int) bool {
	if len(t.word) == 0 || next >= len(text) {
		return false
	}
	last, _ := utf8.DecodeLastRune(t.word)
	r, _ := utf8.DecodeRuneInString(text[next:])
	return unicode.IsLetter(last) && unicode.IsLetter(r) && !isCJK(r)
}

// endWord emits the pending word, if any, and its parts. hyphen tells that
// the word is joined by a hyphen to the word that follows.
func (t *tokenizer) endWord(emit func([]byte, bool), hyphen bool) {
	w, ascii := t.word, t.ascii
	t.word, t.ascii = t.word[:0], true
	switch {
	case len(w) == 0 || len(w) > maxTokenBytes:
		t.endCompound(emit)
		return
	case !ascii:
		t.endCompound(emit)
		if t.out, t.tmp = fold(t.out[:0], t.tmp[:0], w); len(t.out) > 0 {
			emit(t.out, false)
		}
		return
	}
	t.out = appendLower(t.out[:0], w)
	emit(t.out, false)
	for start, i := 0, 1; i <= len(w); i++ {
		if i < len(w) && !wordBreak(w, i) {
			continue
		}
		if start == 0 && i == len(w) {
			break // a single part: the word itself
		}
		t.out = appendLower(t.out[:0], w[start:i])
		emit(t.out, true)
		start = i
	}
	t.compound = appendLower(t.compound, w)
	t.joined++
	if !hyphen || len(t.compound) > maxTokenBytes {
		t.endCompound(emit)
	}
}

// endCompound emits the concatenation of the hyphen-joined words seen so far
// when there are at least two, and starts over.
func (t *tokenizer) endCompound(emit func([]byte, bool)) {
	if t.joined > 1 && len(t.compound) <= maxTokenBytes {
		emit(t.compound, true)
	}
	t.compound, t.joined = t.compound[:0], 0
}

// wordBreak reports whether an ASCII identifier-like word has a part boundary
// before w[i]: between a lowercase letter and an uppercase one ("fooBar"),
// before the last capital of an acronym that starts a capitalised word
// ("HTTPServer"), and between letters and digits ("http2", "x509").
func wordBreak(w []byte, i int) bool {
	p, c := w[i-1], w[i]
	switch {
	case p == '\'' || c == '\'':
		return false
	case isLower(p) && isUpper(c):
		return true
	case isUpper(p) && isUpper(c):
		return i+1 < len(w) && isLower(w[i+1])
	}
	return isDigit(p) != isDigit(c)
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// appendLower appends the ASCII word w, lowercased, to dst.
func appendLower(dst, w []byte) []byte {
	for _, c := range w {
		if isUpper(c) {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// endCJK closes the current CJK run, emitting a lone rune as a unigram.
func (t *tokenizer) endCJK(emit func([]byte, bool)) {
	if t.cjkRun == 1 {
		t.out = utf8.AppendRune(t.out[:0], t.prevCJK)
		emit(t.out, false)
	}
	t.prevCJK, t.cjkRun = 0, 0
}

// isCJK reports whether r belongs to a script written without spaces between
// words that the analyzer indexes as bigrams.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) || r == 'ー'
}

// fold appends to dst the lowercased compatibility decomposition of w with the
// combining marks of Latin letters removed, recomposed (NFC) so that other
// scripts keep their canonical form. tmp is scratch space; both grown slices
// are returned for reuse.
func fold(dst, tmp, w []byte) (out, scratch []byte) {
	for i := 0; i < len(w); {
		r, size := utf8.DecodeRune(w[i:])
		i += size
		tmp = utf8.AppendRune(tmp, unicode.ToLower(r))
	}
	lowered := len(tmp)
	tmp = norm.NFKD.Append(tmp, tmp[:lowered]...)
	decomposed := len(tmp)
	latinBase := false
	for i := lowered; i < decomposed; {
		r, size := utf8.DecodeRune(tmp[i:])
		i += size
		if unicode.Is(unicode.Mn, r) {
			if latinBase {
				continue
			}
		} else {
			latinBase = r < utf8.RuneSelf || unicode.Is(unicode.Latin, r)
		}
		tmp = utf8.AppendRune(tmp, unicode.ToLower(r))
	}
	return norm.NFC.Append(dst, tmp[decomposed:]...), tmp
}

// term maps a raw token to the term that is indexed or searched for: ok is
// false for stopwords; words made of ASCII letters (and inner apostrophes) are
// reduced with the Snowball English stemmer, irregular plurals first mapped to
// their singular; anything else is kept as is.
func term(tok []byte) (t string, ok bool) {
	if _, stop := stopwords[string(tok)]; stop {
		return "", false
	}
	for _, c := range tok {
		if !('a' <= c && c <= 'z' || c == '\'') {
			return string(tok), true
		}
	}
	w := string(tok)
	if singular, ok := irregular[w]; ok {
		w = singular
	}
	return english.Stem(w, true), true
}

// analyze returns the terms a query made of text searches for, in order,
// duplicates included: the terms of its tokens, without the overlapping parts
// (see scan). NewSegment runs the same steps, parts included, with a cache.
func analyze(text string) []string {
	var (
		tz    tokenizer
		terms []string
	)
	tz.scan(text, func(tok []byte, part bool) {
		if part {
			return
		}
		if t, ok := term(tok); ok {
			terms = append(terms, t)
		}
	})
	return terms
}
