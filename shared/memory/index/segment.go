package index

import (
	"math"
	"strings"
	"unsafe"
)

// Doc is one chunk to index.
type Doc struct {
	ID     string    // chunk id, unique across segments
	Text   string    // passage text; analysed, not kept
	Title  string    // titles the passage sits under (document, section path); analysed, not kept
	Vector []float32 // optional embedding; all docs of a segment either have vectors of one dimension or none
}

// Segment is an immutable inverted index over a set of docs: a term
// dictionary, postings (doc ordinal and term frequency) per term, the length
// of every doc in terms, and, when the docs carry embeddings, their vectors
// normalised to unit length. It does not keep the doc texts, only their ids.
// A Segment is safe for concurrent use by any number of readers.
type Segment struct {
	ids      []string
	ties     []uint64          // per doc, the key its ties are broken by (tieKey)
	docLen   []uint32          // analysed terms per doc, stopwords excluded
	totalLen uint64            // sum of docLen
	dict     map[string]uint32 // term → index into offs
	offs     []uint32          // postings of term t are postDoc[offs[t]:offs[t+1]]
	postDoc  []uint32          // doc ordinals, ascending within a term
	postTF   []uint16          // term frequencies, saturated at 65535
	dim      int               // vector dimension, 0 when the segment has no vectors
	vecs     []float32         // len(ids)*dim unit vectors; all zero for a doc without a usable vector
	bytes    int
}

// titleWeight is how many occurrences in the text a term of a doc's title counts for: a
// simplified BM25F, the title field's term frequency weighted and added to the text's, the
// title not counting in the doc's length. 1 measured best on the tuning half of the
// evaluation set (docs/QUALITY.md); 2, 3 and 5 did no better.
const titleWeight = 1

// NewSegment indexes docs. Each doc's text goes through the package's
// analyzer; the vector dimension of the segment is that of the first doc with
// a non-empty vector, and a doc whose vector has another dimension, a zero
// norm or non-finite components is indexed without a vector.
func NewSegment(docs []Doc) *Segment {
	s := &Segment{docLen: make([]uint32, len(docs))}
	var (
		tz      tokenizer
		known   = make(map[string]int32) // raw token → term id, -1 for a stopword
		dict    = make(map[string]uint32)
		terms   []string
		counts  []uint32 // per term id, occurrences in the current doc
		inDoc   []uint32 // term ids seen in the current doc
		pTerm   []uint32 // (term, doc, tf) triples in doc order
		pDoc    []uint32
		pTF     []uint16
		docTerm uint32
		weight  uint32 // how many occurrences a token counts for: 1 in the text, titleWeight in the title
		inTitle bool   // the tokens are the title's, which do not count in the doc's length
	)
	emit := func(tok []byte, part bool) {
		id, ok := known[string(tok)]
		if !ok {
			id = -1
			if t, keep := term(tok); keep {
				tid, seen := dict[t]
				if !seen {
					tid = uint32(len(terms))
					dict[t] = tid
					terms = append(terms, t)
					counts = append(counts, 0)
				}
				id = int32(tid)
			}
			known[string(tok)] = id
		}
		if id < 0 {
			return
		}
		if counts[id] == 0 {
			inDoc = append(inDoc, uint32(id))
		}
		counts[id] += weight
		if !part && !inTitle {
			docTerm++
		}
	}
	for d, doc := range docs {
		inDoc, docTerm = inDoc[:0], 0
		weight, inTitle = 1, false
		tz.scan(doc.Text, emit)
		weight, inTitle = titleWeight, true
		tz.scan(doc.Title, emit)
		for _, t := range inDoc {
			pTerm = append(pTerm, t)
			pDoc = append(pDoc, uint32(d))
			pTF = append(pTF, uint16(min(counts[t], math.MaxUint16)))
			counts[t] = 0
		}
		s.docLen[d] = docTerm
		s.totalLen += uint64(docTerm)
	}

	// Counting sort of the triples by term; doc order is preserved within a term.
	s.offs = make([]uint32, len(terms)+1)
	for _, t := range pTerm {
		s.offs[t+1]++
	}
	for t := range terms {
		s.offs[t+1] += s.offs[t]
	}
	next := append([]uint32(nil), s.offs[:len(terms)]...)
	s.postDoc = make([]uint32, len(pTerm))
	s.postTF = make([]uint16, len(pTerm))
	for i, t := range pTerm {
		j := next[t]
		next[t]++
		s.postDoc[j], s.postTF[j] = pDoc[i], pTF[i]
	}

	s.ids = intern(docs, func(d Doc) string { return d.ID })
	s.ties = make([]uint64, len(docs))
	for d, doc := range docs {
		s.ties[d] = tieKey(doc)
	}
	s.dict = make(map[string]uint32, len(terms))
	for i, t := range intern(terms, func(t string) string { return t }) {
		s.dict[t] = uint32(i)
	}
	s.indexVectors(docs)
	s.bytes = s.estimateBytes(terms)
	return s
}

// tieKey is what a doc's ties with others of its score are broken by before its id: a hash
// (FNV-1a) of its text and title. Ids are minted when a document is stored, so the same
// documents stored again (or in another order) get others; their passages' texts do not
// change, so the same question over them ranks them alike.
func tieKey(d Doc) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, s := range []string{d.Text, "\x00", d.Title} {
		for i := range len(s) {
			h = (h ^ uint64(s[i])) * prime
		}
	}
	return h
}

// intern returns the strings key(x) for x in xs, copied into one shared
// backing string: a segment holds one allocation for all its ids (or terms)
// instead of one per string, and no reference to the caller's memory.
func intern[T any](xs []T, key func(T) string) []string {
	var b strings.Builder
	size := 0
	for _, x := range xs {
		size += len(key(x))
	}
	b.Grow(size)
	for _, x := range xs {
		b.WriteString(key(x))
	}
	all := b.String()
	out := make([]string, len(xs))
	pos := 0
	for i, x := range xs {
		n := len(key(x))
		out[i] = all[pos : pos+n]
		pos += n
	}
	return out
}

// indexVectors stores the unit-length vectors of docs.
func (s *Segment) indexVectors(docs []Doc) {
	for _, doc := range docs {
		if len(doc.Vector) > 0 {
			s.dim = len(doc.Vector)
			break
		}
	}
	if s.dim == 0 {
		return
	}
	s.vecs = make([]float32, len(docs)*s.dim)
	for d, doc := range docs {
		if len(doc.Vector) != s.dim {
			continue
		}
		if inv, ok := invNorm(doc.Vector); ok {
			dst := s.vecs[d*s.dim : (d+1)*s.dim]
			for i, x := range doc.Vector {
				dst[i] = float32(float64(x) * inv)
			}
		}
	}
}

// invNorm returns 1/‖v‖, with ok false when v has a zero norm or a
// non-finite component.
func invNorm(v []float32) (inv float64, ok bool) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsInf(sum, 0) || math.IsNaN(sum) {
		return 0, false
	}
	return 1 / math.Sqrt(sum), true
}

// estimateBytes approximates the heap memory held by s.
func (s *Segment) estimateBytes(terms []string) int {
	const (
		stringHeader = int(unsafe.Sizeof(""))
		mapEntry     = stringHeader + 4 + 8 // key, value, per-entry overhead of the swiss table
	)
	n := int(unsafe.Sizeof(*s))
	for _, id := range s.ids {
		n += stringHeader + len(id)
	}
	for _, t := range terms {
		n += len(t) + mapEntry
	}
	n += 8*len(s.ties) + 4*len(s.docLen) + 4*len(s.offs) + 4*len(s.postDoc) + 2*len(s.postTF) + 4*len(s.vecs)
	return n
}

// Len returns the number of docs in the segment.
func (s *Segment) Len() int { return len(s.ids) }

// Bytes returns an estimate of the memory held by the segment, in bytes, for
// weighted cache eviction. The doc ids are counted; the caller's Doc slice is
// not retained.
func (s *Segment) Bytes() int { return s.bytes }
