package index

import (
	"cmp"
	"math"
	"slices"
	"sync"
)

const (
	bm25K1         = 1.2  // BM25 term-frequency saturation
	bm25B          = 0.75 // BM25 length normalisation
	rrfK           = 60   // Reciprocal Rank Fusion damping constant
	defaultTop     = 5
	minFusionDepth = 50 // minimum depth of each ranking fed to RRF
)

// Hit is one ranked doc.
type Hit struct {
	ID      string
	Score   float64 // the fused score (or BM25 score when lexical only), higher is better
	Lexical float64 // BM25 score (0 when the doc matched no term)
	Vector  float64 // cosine similarity (0 when no vectors)
}

// Query describes a search.
type Query struct {
	Text   string
	Vector []float32 // optional query embedding
	Top    int       // number of hits wanted; <= 0 means 5
	// Keep is an optional filter called with a doc id: false drops the doc
	// before ranking. nil keeps all docs. It is called only for docs that
	// would enter a ranking, and must be safe to call from the caller's
	// goroutine (Search does not start goroutines).
	Keep func(id string) bool
}

// scratch holds the per-query buffers Search reuses through scratchPool.
// acc is a dense score accumulator indexed by doc ordinal, sized for the
// largest segment seen and all zeros between uses; touched lists the entries
// to rank and reset. (A map accumulator measured eight times slower on the
// 100k-chunk benchmark.)
type scratch struct {
	acc      []float64
	touched  []uint32
	slots    []int32 // posting-list index of term i in segment j at j*len(terms)+i, -1 when absent
	df, w    []float64
	lex, vec []cand
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Search ranks the docs of segs as one corpus: the BM25 statistics (number of
// docs, average doc length, document frequency of each term) are sums over
// segs, so the result does not depend on how docs are split into segments.
// It returns at most q.Top hits, best first; docs of equal scores rank by a
// hash of their text and title, then by ascending ID, so that documents stored
// again under other ids rank alike.
// Docs that match no query term and have no vector score are not returned.
//
// When q.Vector is set and some segment has vectors of the same dimension the
// ranking is hybrid (see the package documentation); a vector of another
// dimension, or one with a zero norm, is ignored. nil segments are skipped.
func Search(segs []*Segment, q Query) []Hit {
	top := q.Top
	if top <= 0 {
		top = defaultTop
	}
	terms, weights := expand(queryTerms(q.Text))
	qvec := unit(q.Vector)
	hybrid := false
	for _, s := range segs {
		if s != nil && qvec != nil && s.dim == len(qvec) {
			hybrid = true
		}
	}
	if len(terms) == 0 && !hybrid {
		return nil
	}

	sc := scratchPool.Get().(*scratch)
	c0, c1 := sc.corpusStats(segs, terms, weights)
	depth := top
	if hybrid {
		depth = max(minFusionDepth, 4*top)
	}
	lex := topK{segs: segs, k: depth, h: sc.lex[:0]}
	vec := topK{segs: segs, k: depth, h: sc.vec[:0]}
	for si, s := range segs {
		if s == nil || len(s.ids) == 0 {
			continue
		}
		if cap(sc.acc) < len(s.ids) {
			sc.acc = make([]float64, len(s.ids))
		}
		acc := sc.acc[:len(s.ids)]
		touched := s.accumulate(sc.slots[si*len(terms):(si+1)*len(terms)], sc.w, c0, c1, acc, sc.touched[:0])
		if hybrid && s.dim == len(qvec) {
			s.rankAll(int32(si), qvec, acc, &lex, &vec, q.Keep)
		} else {
			s.rankTouched(int32(si), touched, acc, &lex, q.Keep)
		}
		for _, d := range touched {
			acc[d] = 0
		}
		sc.touched = touched[:0]
	}

	var hits []Hit
	if hybrid {
		hits = fuse(segs, lex.sorted(), vec.sorted(), top)
	} else {
		ranked := lex.sorted()
		hits = make([]Hit, len(ranked))
		for i, c := range ranked {
			hits[i] = Hit{ID: segs[c.seg].ids[c.ord], Score: c.lex, Lexical: c.lex}
		}
	}
	sc.lex, sc.vec = lex.h[:0], vec.h[:0]
	// Not deferred: if Keep panics the scratch, whose acc may be dirty, is dropped.
	scratchPool.Put(sc)
	return hits
}

// queryTerms returns the distinct terms of text in order of first occurrence.
func queryTerms(text string) []string {
	terms := analyze(text)
	out := terms[:0]
	var seen map[string]bool // for long queries (pasted passages); short ones scan out
	if len(terms) > 16 {
		seen = make(map[string]bool, len(terms))
	}
	for _, t := range terms {
		if seen != nil {
			if seen[t] {
				continue
			}
			seen[t] = true
		} else if slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// corpusStats fills sc.slots and sc.w (the weight weights[i]·idf·(k1+1) of
// term i) for terms over segs and returns the BM25 length-normalisation constants:
// a doc of length dl has the denominator tf + c0 + c1·dl.
func (sc *scratch) corpusStats(segs []*Segment, terms []string, weights []float64) (c0, c1 float64) {
	sc.slots = sc.slots[:0]
	sc.df = append(sc.df[:0], make([]float64, len(terms))...)
	var docs, length float64
	for _, s := range segs {
		if s == nil {
			for range terms {
				sc.slots = append(sc.slots, -1)
			}
			continue
		}
		docs += float64(len(s.ids))
		length += float64(s.totalLen)
		for i, t := range terms {
			slot := int32(-1)
			if x, ok := s.dict[t]; ok {
				slot = int32(x)
				sc.df[i] += float64(s.offs[x+1] - s.offs[x])
			}
			sc.slots = append(sc.slots, slot)
		}
	}
	sc.w = sc.w[:0]
	for i, df := range sc.df {
		idf := math.Log(1 + (docs-df+0.5)/(df+0.5))
		sc.w = append(sc.w, weights[i]*idf*(bm25K1+1))
	}
	if length == 0 {
		return bm25K1, 0 // no doc has a term: nothing will be scored
	}
	return bm25K1 * (1 - bm25B), bm25K1 * bm25B * docs / length
}

// accumulate adds the BM25 contribution of every query term present in s to
// acc and returns touched extended with the ordinals of the docs whose
// accumulator went from zero to positive. Terms are added in query order, so
// a doc's score is bit-for-bit the same whatever segment it sits in.
func (s *Segment) accumulate(slots []int32, w []float64, c0, c1 float64, acc []float64, touched []uint32) []uint32 {
	for i, slot := range slots {
		if slot < 0 {
			continue
		}
		wi := w[i]
		lo, hi := s.offs[slot], s.offs[slot+1]
		docs, tfs := s.postDoc[lo:hi], s.postTF[lo:hi]
		for j, d := range docs {
			tf := float64(tfs[j])
			v := wi * tf / (tf + c0 + c1*float64(s.docLen[d]))
			if acc[d] == 0 {
				touched = append(touched, d)
			}
			acc[d] += v
		}
	}
	return touched
}

// rankTouched offers the docs with a lexical score to the lexical ranking.
func (s *Segment) rankTouched(si int32, touched []uint32, acc []float64, lex *topK, keep func(string) bool) {
	for _, d := range touched {
		score := acc[d]
		if !lex.admits(score, si, d) || keep != nil && !keep(s.ids[d]) {
			continue
		}
		lex.push(cand{key: score, lex: score, seg: si, ord: d})
	}
}

// rankAll offers every doc of s to the lexical ranking (when it has a lexical
// score) and to the vector ranking (when its cosine with qvec is positive).
func (s *Segment) rankAll(si int32, qvec []float32, acc []float64, lex, vec *topK, keep func(string) bool) {
	dim := len(qvec)
	for d := range s.ids {
		ord := uint32(d)
		score := acc[d]
		cos := float64(dot(qvec, s.vecs[d*dim:(d+1)*dim]))
		inLex := score > 0 && lex.admits(score, si, ord)
		inVec := cos > 0 && vec.admits(cos, si, ord)
		if !inLex && !inVec || keep != nil && !keep(s.ids[d]) {
			continue
		}
		c := cand{lex: score, cos: cos, seg: si, ord: ord}
		if inLex {
			c.key = score
			lex.push(c)
		}
		if inVec {
			c.key = cos
			vec.push(c)
		}
	}
}

// fuse merges the lexical and vector rankings with Reciprocal Rank Fusion and
// returns the top hits.
func fuse(segs []*Segment, lex, vec []cand, top int) []Hit {
	type fused struct {
		c     cand
		score float64
	}
	at := make(map[uint64]int, len(lex)+len(vec))
	all := make([]fused, 0, len(lex)+len(vec))
	for _, ranking := range [][]cand{lex, vec} {
		for rank, c := range ranking {
			contrib := 1 / float64(rrfK+rank+1)
			key := uint64(c.seg)<<32 | uint64(c.ord)
			if i, ok := at[key]; ok {
				all[i].score += contrib
				continue
			}
			at[key] = len(all)
			all = append(all, fused{c: c, score: contrib})
		}
	}
	slices.SortFunc(all, func(x, y fused) int {
		if x.score != y.score {
			return cmp.Compare(y.score, x.score)
		}
		return tied(segs, x.c.seg, x.c.ord, y.c.seg, y.c.ord)
	})
	all = all[:min(top, len(all))]
	hits := make([]Hit, len(all))
	for i, f := range all {
		hits[i] = Hit{ID: segs[f.c.seg].ids[f.c.ord], Score: f.score, Lexical: f.c.lex, Vector: f.c.cos}
	}
	return hits
}

// unit returns v scaled to unit length, or nil when v is empty or has a zero
// norm or non-finite components.
func unit(v []float32) []float32 {
	inv, ok := invNorm(v)
	if !ok {
		return nil
	}
	u := make([]float32, len(v))
	for i, x := range v {
		u[i] = float32(float64(x) * inv)
	}
	return u
}

// dot returns the dot product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
