package index

// Merge returns one segment holding the docs of segs, in order (nil segments are skipped).
// Searching it ranks and scores exactly as searching segs does, since Search treats its
// segments as one corpus; it spares a query the fixed cost of each segment. ok is false when
// segs hold vectors of different dimensions. The merged segment shares the ids and terms of
// segs, and copies their postings.
func Merge(segs []*Segment) (merged *Segment, ok bool) {
	m := &Segment{}
	docs, posts := 0, 0
	for _, s := range segs {
		if s == nil {
			continue
		}
		if s.dim != 0 && m.dim != 0 && s.dim != m.dim {
			return nil, false
		}
		m.dim = max(m.dim, s.dim)
		docs += len(s.ids)
		posts += len(s.postDoc)
	}

	// The merged term of each segment's terms, and the postings of each merged term.
	dict := make(map[string]uint32)
	var (
		terms  []string
		counts []uint32
	)
	local := make([][]uint32, len(segs))
	for si, s := range segs {
		if s == nil {
			continue
		}
		local[si] = make([]uint32, len(s.offs)-1)
		for t, x := range s.dict {
			id, seen := dict[t]
			if !seen {
				id = uint32(len(terms))
				dict[t] = id
				terms = append(terms, t)
				counts = append(counts, 0)
			}
			local[si][x] = id
			counts[id] += s.offs[x+1] - s.offs[x]
		}
	}
	m.dict = dict
	m.offs = make([]uint32, len(terms)+1)
	for t, c := range counts {
		m.offs[t+1] = m.offs[t] + c
	}

	// Segments are copied in order, so the docs of each term stay ascending.
	next := append([]uint32(nil), m.offs[:len(terms)]...)
	m.postDoc, m.postTF = make([]uint32, posts), make([]uint16, posts)
	m.ids, m.ties, m.docLen = make([]string, 0, docs), make([]uint64, 0, docs), make([]uint32, 0, docs)
	if m.dim != 0 {
		m.vecs = make([]float32, 0, docs*m.dim)
	}
	for si, s := range segs {
		if s == nil {
			continue
		}
		base := uint32(len(m.ids))
		for x, id := range local[si] {
			lo, hi := s.offs[x], s.offs[x+1]
			j := next[id]
			for k, d := range s.postDoc[lo:hi] {
				m.postDoc[j+uint32(k)] = base + d
			}
			copy(m.postTF[j:], s.postTF[lo:hi])
			next[id] = j + hi - lo
		}
		m.ids = append(m.ids, s.ids...)
		m.ties = append(m.ties, s.ties...)
		m.docLen = append(m.docLen, s.docLen...)
		m.totalLen += s.totalLen
		if m.dim != 0 {
			if s.dim == m.dim {
				m.vecs = append(m.vecs, s.vecs...)
			} else {
				m.vecs = append(m.vecs, make([]float32, len(s.ids)*m.dim)...)
			}
		}
	}
	m.bytes = m.estimateBytes(terms)
	return m, true
}
