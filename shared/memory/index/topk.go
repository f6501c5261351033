package index

import (
	"cmp"
	"slices"
)

// cand is a doc offered to a ranking: key is the value ranked on (the BM25
// score or the cosine), lex and cos are kept for the hit.
type cand struct {
	key, lex, cos float64
	seg           int32
	ord           uint32
}

// topK keeps the k best candidates seen so far in a heap whose root is the
// worst of them. Higher keys rank first; equal keys rank as tied does.
type topK struct {
	segs []*Segment
	k    int
	h    []cand
}

// before reports whether the doc (key, seg, ord) ranks before c.
func (t *topK) before(key float64, seg int32, ord uint32, c *cand) bool {
	if key != c.key {
		return key > c.key
	}
	return tied(t.segs, seg, ord, c.seg, c.ord) < 0
}

// tied orders two docs of equal scores, doc (sa, a) and doc (sb, b) of segs: by their tie keys
// (tieKey: their texts and titles), then by ascending id, so that the same question over the
// same documents ranks them alike, whatever ids the documents got and wherever they sit.
func tied(segs []*Segment, sa int32, a uint32, sb int32, b uint32) int {
	return cmp.Or(cmp.Compare(segs[sa].ties[a], segs[sb].ties[b]), cmp.Compare(segs[sa].ids[a], segs[sb].ids[b]))
}

// admits reports whether a doc with this key would be kept by push.
func (t *topK) admits(key float64, seg int32, ord uint32) bool {
	return len(t.h) < t.k || t.before(key, seg, ord, &t.h[0])
}

// push adds c, which admits accepted, evicting the worst candidate when full.
func (t *topK) push(c cand) {
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		t.up(len(t.h) - 1)
		return
	}
	t.h[0] = c
	t.down(0)
}

// worse reports whether h[i] ranks after h[j].
func (t *topK) worse(i, j int) bool {
	c := &t.h[j]
	return t.before(c.key, c.seg, c.ord, &t.h[i])
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.worse(i, p) {
			return
		}
		t.h[i], t.h[p] = t.h[p], t.h[i]
		i = p
	}
}

func (t *topK) down(i int) {
	for {
		w := i
		if l := 2*i + 1; l < len(t.h) && t.worse(l, w) {
			w = l
		}
		if r := 2*i + 2; r < len(t.h) && t.worse(r, w) {
			w = r
		}
		if w == i {
			return
		}
		t.h[i], t.h[w] = t.h[w], t.h[i]
		i = w
	}
}

// sorted returns the kept candidates, best first. The heap is consumed.
func (t *topK) sorted() []cand {
	slices.SortFunc(t.h, func(x, y cand) int {
		switch {
		case t.before(x.key, x.seg, x.ord, &y):
			return -1
		case t.before(y.key, y.seg, y.ord, &x):
			return 1
		}
		return 0
	})
	return t.h
}
