package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// defaultMaxTokens is the chunk size used when ChunkOptions.MaxTokens is zero.
	defaultMaxTokens = 400
	// defaultOverlap is the overlap used when ChunkOptions.Overlap is zero.
	defaultOverlap = 60
	// minMaxTokens is the smallest chunk size Split works with: a single
	// character can take up to four tokens, and a chunk must hold an overlap
	// and at least one character.
	minMaxTokens = 16

	// longRun is the length in bytes above which a run of non-space
	// characters is cut by windows instead of being tokenised whole: the BPE
	// merge is quadratic in the length of a run of letters.
	longRun = 1024
)

// ChunkOptions configures Split.
type ChunkOptions struct {
	// MaxTokens is the hard cap on the tokens of a chunk, overlap included.
	// Zero or negative means 400; positive values below 16 are raised to 16,
	// since one character can take up to four tokens.
	MaxTokens int
	// Overlap is about how many tokens from the end of the previous chunk
	// each chunk after the first starts with. Zero means 60, a negative value
	// disables overlap, and values of MaxTokens/2 or more are lowered to
	// MaxTokens/2 - 1.
	Overlap int
	// Headings are the headings of the text (Page.Headings), in order, for the chunks' Section.
	Headings []Heading
}

// resolve returns the effective chunk size and overlap.
func (o ChunkOptions) resolve() (maxTokens, overlap int) {
	maxTokens = o.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	maxTokens = max(maxTokens, minMaxTokens)
	overlap = o.Overlap
	switch {
	case overlap == 0:
		overlap = defaultOverlap
	case overlap < 0:
		overlap = 0
	}
	overlap = min(overlap, maxTokens/2-1)
	return maxTokens, overlap
}

// Chunk is one piece of a text cut by Split.
type Chunk struct {
	// Text is the chunk, starting with the overlap taken from the previous chunk.
	Text string
	// Tokens is Tokens(Text); it never exceeds the MaxTokens it was cut with.
	Tokens int
	// Position is the 0-based order of the chunk within the input.
	Position int
	// Section is the path of the headings (ChunkOptions.Headings) the chunk's own text stands
	// under, outermost first, joined by " › ": the last heading that starts before the end of
	// its first paragraph (or sentence, when a paragraph does not fit in a chunk) after the
	// overlap that is more than headings, and the headings that heading nests in. Empty before
	// the first heading.
	Section string
}

// Split cuts s into chunks of at most MaxTokens tokens.
//
// Whitespace is normalised first: line endings become "\n", runs of spaces
// and tabs collapse to one space, lines are trimmed and at most one blank
// line is kept between paragraphs. Empty or blank input yields no chunks.
//
// Cuts prefer, in order, paragraph boundaries (blank lines), sentence
// boundaries (".", "!" or "?" followed by a space or newline, or the CJK
// "。", "！", "？"), line breaks and spaces between words; only a single word
// longer than a chunk is cut inside, on token boundaries that never split a
// character. Consecutive small paragraphs are packed into one chunk. When a
// chunk is full, Split cuts at the strongest boundary that still leaves the
// chunk at least half full.
//
// Each chunk after the first starts with about Overlap tokens from the end of
// the previous chunk, starting at a sentence start when that gives at least
// half the wanted overlap, otherwise at a word start (a clause start in text
// without spaces, a token boundary inside a very long word). Split is
// deterministic and every chunk
// satisfies Tokens <= MaxTokens (after the adjustments described on
// ChunkOptions).
func Split(s string, o ChunkOptions) []Chunk {
	s = normalizeSpace(s)
	return split(s, o, newSpans(s, &counter{}))
}

// SplitTokens returns Split(s, o) and Tokens(s), in less time than the two apart: s and the
// chunks are counted with one cache of pieces, and a text Split leaves as it is (as Extract
// writes them) is counted once for both.
func SplitTokens(s string, o ChunkOptions) ([]Chunk, int) {
	var count counter
	norm := normalizeSpace(s)
	sp := newSpans(norm, &count)
	n := 0
	if norm == s {
		n = sp.tokens(0, len(s))
	} else {
		n = count.tokens(s)
	}
	return split(norm, o, sp), n
}

// split is Split of the normalised text s, counted with sp.
//
// Every text the chunker counts, and every chunk, is a part of the normalised text: pieces and
// their separators follow each other in it, and an overlap is the end of the chunk before. So
// the chunker works on offsets in the normalised text and counts with spans: the text's
// pre-tokenisation pieces are counted once, not once for every candidate chunk, overlap and part
// that holds them. A chunk's text is a part of the normalised text, not a copy.
func split(s string, o ChunkOptions, sp *spans) []Chunk {
	if s == "" {
		return nil
	}
	maxTokens, overlap := o.resolve()
	c := chunker{
		s:         s,
		maxTokens: maxTokens,
		overlap:   overlap,
		// A piece must fit next to the overlap and one separator token.
		pieceCap: maxTokens - overlap - 1,
		count:    sp,
	}
	sc := sectioner{marks: headingMarks(s, o.Headings)}
	var pieces []piece
	start := 0 // offset in s of the paragraph
	for i, para := range strings.Split(s, "\n\n") {
		sep := "\n\n"
		if i == 0 {
			sep = ""
		}
		start += len(sep)
		first := len(pieces)
		pieces = c.split(pieces, start, para, sep, cutParagraph, cutSentence)
		for k := first; k < len(pieces); k++ {
			pieces[k].section, pieces[k].heading = sc.at(pieces[k].start, pieces[k].end())
		}
		start += len(para)
	}
	return c.pack(pieces)
}

// boundary is the strength of the boundary before a piece of text.
type boundary int

const (
	cutInWord boundary = iota
	cutWord
	cutLine
	cutSentence
	cutParagraph
)

// piece is an atomic unit of packing: a paragraph, sentence, line, word or
// word fragment that fits in a chunk on its own.
type piece struct {
	start   int // offset of text in the normalised text
	text    string
	sep     string   // separator written before text when it follows other text
	brk     boundary // strength of the boundary before text
	tokens  int      // Tokens(text)
	section string   // heading path in force where text ends
	heading bool     // text holds nothing but headings
}

// end is the offset of the end of p's text in the normalised text.
func (p piece) end() int { return p.start + len(p.text) }

// segment is a part of a text together with the separator that preceded it.
type segment struct {
	off  int // offset of text in the text cut
	text string
	sep  string
}

type chunker struct {
	s         string // the normalised text
	maxTokens int
	overlap   int
	pieceCap  int
	count     *spans
	// sentences and words are tail's, kept from one chunk to the next.
	sentences, words []int
}

// tokens counts the tokens of c.s[a:b].
func (c *chunker) tokens(a, b int) int { return c.count.tokens(a, b) }

// split appends to out the pieces of text, which starts at offset start, cutting it at level
// and, where a part is still too large, at the finer levels below.
func (c *chunker) split(out []piece, start int, text, sep string, brk boundary, level boundary) []piece {
	if n, ok := c.fits(start, text); ok {
		return append(out, piece{start: start, text: text, sep: sep, brk: brk, tokens: n})
	}
	var segs []segment
	for ; level > cutInWord; level-- {
		segs = segmentsAt(text, level)
		if len(segs) > 1 {
			break
		}
	}
	if level == cutInWord {
		at := start
		for i, part := range c.cutWord(start, text) {
			p := piece{start: at, text: part, sep: "", brk: cutInWord, tokens: c.tokens(at, at+len(part))}
			if i == 0 {
				p.sep, p.brk = sep, brk
			}
			out = append(out, p)
			at += len(part)
		}
		return out
	}
	for i, seg := range segs {
		segSep, segBrk := seg.sep, level
		if i == 0 {
			segSep, segBrk = sep, brk
		}
		out = c.split(out, start+seg.off, seg.text, segSep, segBrk, level-1)
	}
	return out
}

// fits reports whether text, at offset start, fits in a piece, and its token
// count if it was counted. Texts with a very long run of non-space characters
// are never counted whole, so that they are cut into windows first.
func (c *chunker) fits(start int, text string) (int, bool) {
	if hasLongRun(text) {
		return 0, false
	}
	n := c.tokens(start, start+len(text))
	return n, n <= c.pieceCap
}

// cutWord cuts a text without usable boundaries, at offset start, into parts
// of at most pieceCap tokens, on token boundaries adjusted to whole
// characters. It works on windows of eight times pieceCap characters so that
// the cost stays linear in the length of the text.
func (c *chunker) cutWord(start int, w string) []string {
	var parts []string
	for w != "" {
		win := runePrefix(w, 8*c.pieceCap)
		toks := encode(win)
		if len(toks) <= c.pieceCap {
			parts = append(parts, win)
			w = w[len(win):]
			continue
		}
		part := ""
		for k := c.pieceCap; k > 0 && part == ""; k-- {
			n := len(decode(toks[:k]))
			for n > 0 && n < len(win) && !utf8.RuneStart(win[n]) {
				n--
			}
			if n > 0 && c.tokens(start, start+n) <= c.pieceCap {
				part = win[:n]
			}
		}
		if part == "" {
			part = runePrefix(w, 1)
		}
		parts = append(parts, part)
		w = w[len(part):]
		start += len(part)
	}
	return parts
}

// pack groups pieces into chunks, adding the overlap. A chunk is the part of
// the normalised text from its overlap (or its first piece) to the end of its
// last piece.
func (c *chunker) pack(pieces []piece) []Chunk {
	var chunks []Chunk
	prevStart := 0
	for i := 0; i < len(pieces); {
		overlap := pieces[i].start // none
		if i > 0 {
			if from := c.tail(prevStart, pieces[i-1].end()); from < pieces[i-1].end() {
				overlap = from
			}
		}
		start, n, next := c.fill(pieces, i, overlap)
		chunks = append(chunks, Chunk{Text: c.s[start:pieces[next-1].end()], Tokens: n, Position: len(chunks), Section: section(pieces[i:next])})
		prevStart, i = start, next
	}
	return chunks
}

// section returns the section of a chunk made of pieces: that of its first piece that is more
// than headings, else of its last.
func section(pieces []piece) string {
	for _, p := range pieces {
		if !p.heading {
			return p.section
		}
	}
	return pieces[len(pieces)-1].section
}

// fill builds the chunk that starts with the overlap at offset overlap (none
// when that is pieces[i].start) and pieces[i], returning the offset where it
// starts, its token count and the index of the first piece left for the next
// chunk.
func (c *chunker) fill(pieces []piece, i int, overlap int) (int, int, int) {
	for {
		hasOverlap := overlap < pieces[i].start
		budget := c.maxTokens
		if hasOverlap {
			budget -= c.tokens(overlap, pieces[i-1].end())
		}
		j, used := i, 0
		for j < len(pieces) {
			cost := pieces[j].tokens
			if j > i || hasOverlap {
				cost += sepCost(pieces[j].sep)
			}
			if j > i && used+cost > budget {
				break
			}
			used += cost
			j++
		}
		if j < len(pieces) {
			j = bestCut(pieces, i, j, budget)
		}
		// The estimate adds up counts of separately tokenised pieces; check
		// the real count and give back pieces if merging changed it.
		for ; j > i; j-- {
			if n := c.tokens(overlap, pieces[j-1].end()); n <= c.maxTokens {
				return overlap, n, j
			}
		}
		// Even one piece does not fit next to the overlap: drop the overlap.
		// A piece alone always fits, so the next round ends.
		overlap = pieces[i].start
	}
}

// bestCut chooses where to end a full chunk holding pieces[i:j] when
// pieces[j] does not fit: at the strongest boundary, the latest among equals,
// that keeps the chunk at least half full by the estimate.
func bestCut(pieces []piece, i, j, budget int) int {
	best, bestBrk := j, boundary(-1)
	used := 0
	for k := i + 1; k <= j; k++ {
		used += pieces[k-1].tokens
		if k-1 > i {
			used += sepCost(pieces[k-1].sep)
		}
		if used*2 >= budget && pieces[k].brk >= bestBrk {
			best, bestBrk = k, pieces[k].brk
		}
	}
	return best
}

// sepCost is the token budget reserved for a separator.
func sepCost(sep string) int {
	if sep == "" {
		return 0
	}
	return 1
}

// tail returns where the overlap to carry from the previous chunk, c.s[start:end],
// into the next one starts (end for none): the longest suffix of at most
// c.overlap tokens that starts at a sentence, or a word if no sentence suffix
// gives half of the wanted overlap, or a token boundary if the chunk ends with
// a word longer than the overlap.
func (c *chunker) tail(start, end int) int {
	if c.overlap <= 0 {
		return end
	}
	c.sentences, c.words = starts(c.s[start:end], c.sentences, c.words)
	sentences, words := c.sentences, c.words
	best := c.longestSuffix(start, end, sentences, c.overlap)
	if best < end && c.tokens(best, end)*2 >= c.overlap {
		return best
	}
	if w := c.longestSuffix(start, end, words, c.overlap); w < best {
		best = w
	}
	if best < end {
		return best
	}
	return c.tokenTail(start, end, c.overlap)
}

// longestSuffix returns where the longest c.s[start+offset:end] with at most n
// tokens starts, among the given ascending offsets, offsets[0] (the start)
// excluded so that the overlap is never the whole previous chunk; end when
// there is none. Token counts of suffixes grow as the start moves left, so a
// binary search suffices.
func (c *chunker) longestSuffix(start, end int, offsets []int, n int) int {
	lo, hi := 1, len(offsets)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if c.tokens(start+offsets[mid], end) <= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == len(offsets) {
		return end
	}
	return start + offsets[lo]
}

// tokenTail returns where a suffix of c.s[start:end] of at most n tokens, cut on
// a token boundary adjusted to a whole character, starts; end when there is
// none.
func (c *chunker) tokenTail(start, end int, n int) int {
	win := runeSuffix(c.s[start:end], 4*n)
	from := end - len(win)
	toks := encode(win)
	if len(toks) <= n {
		return from
	}
	for k := n; k > 0; k-- {
		at := len(win) - len(decode(toks[len(toks)-k:]))
		for at < len(win) && !utf8.RuneStart(win[at]) {
			at++
		}
		if at < len(win) && c.tokens(from+at, end) <= n {
			return from + at
		}
	}
	return end
}

// starts returns the ascending byte offsets in s where a sentence or
// paragraph starts, and where a word starts, appended to sentences[:0] and
// words[:0]. In text without spaces, such as Chinese or Japanese, the start of
// a clause after "，", "、", "；" or "：" counts as a word start.
func starts(s string, sentences, words []int) ([]int, []int) {
	sentences = append(sentences[:0], 0)
	words = append(words[:0], 0)
	var prev rune
	for i, r := range s {
		if i > 0 && r != ' ' && r != '\n' {
			switch prev {
			case ' ', '\n':
				words = append(words, i)
				if prev == '\n' && i >= 2 && s[i-2] == '\n' {
					sentences = append(sentences, i)
				}
			case '，', '、', '；', '：':
				words = append(words, i)
			}
		}
		prev = r
	}
	for _, start := range sentenceSpans(s) {
		sentences = insertSorted(sentences, start)
	}
	return sentences, words
}

// insertSorted inserts v into the ascending slice xs if it is not there yet.
func insertSorted(xs []int, v int) []int {
	k := len(xs)
	for k > 0 && xs[k-1] > v {
		k--
	}
	if k > 0 && xs[k-1] == v {
		return xs
	}
	xs = append(xs, 0)
	copy(xs[k+1:], xs[k:])
	xs[k] = v
	return xs
}

// segmentsAt cuts text at the given level.
func segmentsAt(text string, level boundary) []segment {
	switch level {
	case cutSentence:
		return sentences(text)
	case cutLine:
		return splitOn(text, "\n")
	default:
		return splitOn(text, " ")
	}
}

// splitOn cuts text at every sep.
func splitOn(text, sep string) []segment {
	parts := strings.Split(text, sep)
	segs := make([]segment, 0, len(parts))
	off := 0
	for i, p := range parts {
		if i > 0 {
			off += len(sep)
		}
		if p != "" {
			s := sep
			if i == 0 {
				s = ""
			}
			segs = append(segs, segment{off: off, text: p, sep: s})
		}
		off += len(p)
	}
	return segs
}

// sentences cuts a paragraph into sentences; each sentence after the first
// carries the whitespace that followed the previous one as its separator.
func sentences(p string) []segment {
	var segs []segment
	prev, sep := 0, ""
	for _, start := range sentenceSpans(p) {
		end, ws := start, ""
		if c := p[start-1]; c == ' ' || c == '\n' {
			end, ws = start-1, p[start-1:start]
		}
		segs = append(segs, segment{off: prev, text: p[prev:end], sep: sep})
		prev, sep = start, ws
	}
	return append(segs, segment{off: prev, text: p[prev:], sep: sep})
}

// sentenceSpans returns the byte offsets where a new sentence starts in p
// (after a sentence end and the whitespace that follows it), excluding 0 and
// len(p). A sentence ends after ".", "!" or "?" (with any closing quotes or
// brackets) followed by a space or newline and a character that is not a
// lower-case letter (so "e.g. this" stays together), or after "。", "！" or
// "？" whether or not whitespace follows.
func sentenceSpans(p string) []int {
	var out []int
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		cjk := isCJKTerminal(r)
		if !cjk && !isTerminal(r) {
			continue
		}
		for i < len(p) {
			r2, s2 := utf8.DecodeRuneInString(p[i:])
			if !isTerminal(r2) && !isCJKTerminal(r2) && !isCloser(r2) {
				break
			}
			i += s2
		}
		if i >= len(p) {
			break
		}
		if c := p[i]; c == ' ' || c == '\n' {
			if i+1 >= len(p) {
				break
			}
			next, _ := utf8.DecodeRuneInString(p[i+1:])
			if !cjk && unicode.IsLower(next) {
				continue
			}
			out = append(out, i+1)
			i++
			continue
		}
		if cjk {
			out = append(out, i)
		}
	}
	return out
}

func isTerminal(r rune) bool { return r == '.' || r == '!' || r == '?' }

func isCJKTerminal(r rune) bool { return r == '。' || r == '！' || r == '？' }

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '”', '’', '»', '」', '』', '）', '】', '〉', '》':
		return true
	}
	return false
}

// normalizeSpace normalises line endings, collapses runs of whitespace inside
// lines to one space, trims lines and keeps at most one blank line between
// paragraphs. Invalid UTF-8 is replaced by U+FFFD.
func normalizeSpace(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var b strings.Builder
	b.Grow(len(s))
	blank := false
	for line := range strings.SplitSeq(s, "\n") {
		words := 0
		for f := range strings.FieldsSeq(line) {
			switch {
			case words > 0:
				b.WriteByte(' ')
			case blank:
				b.WriteString("\n\n")
			case b.Len() > 0:
				b.WriteByte('\n')
			}
			b.WriteString(f)
			words++
		}
		blank = words == 0 && b.Len() > 0
	}
	return b.String()
}

// hasLongRun reports whether s contains more than longRun consecutive bytes
// without a space or newline.
func hasLongRun(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' || s[i] == '\n' {
			run = 0
			continue
		}
		run++
		if run > longRun {
			return true
		}
	}
	return false
}

// runePrefix returns the first n runes of s.
func runePrefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// runeSuffix returns the last n runes of s.
func runeSuffix(s string, n int) string {
	i := len(s)
	for ; i > 0 && n > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
