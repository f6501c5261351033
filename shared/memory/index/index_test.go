package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"lowercases and stems", "Running RUNS runner", []string{"run", "run", "runner"}},
		{"drops stopwords", "The quick brown fox is over the dog", []string{"quick", "brown", "fox", "dog"}},
		{"stopword only", "what is the and of", nil},
		{"contractions and possessives", "don't stop Go's channels", []string{"stop", "go", "channel"}},
		{"curly apostrophe", "don’t", nil},
		{"letters and digits stay together", "http2 float64", []string{"http2", "float64"}},
		{"punctuation splits", "utf-8, x+y; a.b", []string{"utf", "8", "x", "b"}},
		{"irregular plurals", "indices index children", []string{"index", "index", "child"}},
		{"Latin diacritics folded", "Café naïve RÉSUMÉ", []string{"cafe", "naiv", "resum"}},
		{"compatibility forms folded", "ＡＢＣ ﬁle", []string{"abc", "file"}},
		{"other scripts kept", "Привет мир γειά", []string{"привет", "мир", "γειά"}},
		{"Han bigrams", "东京都", []string{"东京", "京都"}},
		{"Japanese mixed scripts", "東京に行く", []string{"東京", "京に", "に行", "行く"}},
		{"lone Han rune", "猫 is here", []string{"猫"}},
		{"CJK next to Latin", "Go语言", []string{"go", "语言"}},
		{"overlong token dropped", strings.Repeat("a", maxTokenBytes+1) + " ok", []string{"ok"}},
		{"hyphen before a non-ASCII letter", "café-été, a ‘-’ sign", []string{"cafe", "ete", "sign"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := analyze(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("analyze(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestIndexExpansions checks that identifier parts and hyphenated compounds
// are indexed, so prose and code spellings find each other.
func TestIndexExpansions(t *testing.T) {
	seg := NewSegment([]Doc{
		{ID: "camel", Text: "set DefaultGODEBUG in the HTTPServer"},
		{ID: "hyphen", Text: "a built-in function with run-time checks"},
		{ID: "digits", Text: "the http2client setting"},
		{ID: "other", Text: "nothing relevant at all"},
	})
	tests := []struct {
		query string
		want  string
	}{
		{"default godebug", "camel"},
		{"server", "camel"},
		{"builtin", "hyphen"},
		{"runtime", "hyphen"},
		{"http client", "digits"},
		{"HTTP/2", "digits"},
	}
	for _, tt := range tests {
		hits := Search([]*Segment{seg}, Query{Text: tt.query})
		if len(hits) == 0 || hits[0].ID != tt.want {
			t.Errorf("Search(%q) = %v, want %s first", tt.query, ids(hits), tt.want)
		}
	}
}

func TestSearchRanking(t *testing.T) {
	docs := []Doc{
		{ID: "chan", Text: "Sending on a closed channel causes a panic."},
		{ID: "map", Text: "A map is an unordered group of elements indexed by unique keys."},
		{ID: "run", Text: "She runs the program every morning before work."},
		{ID: "slice", Text: "A slice describes a contiguous segment of an underlying array."},
		{ID: "zh", Text: "我喜欢学习中文和编程。"},
		{ID: "ja", Text: "東京都に住んでいます。"},
		{ID: "chan2", Text: "A channel provides a mechanism for goroutines to communicate."},
	}
	seg := NewSegment(docs)
	tests := []struct {
		name  string
		query Query
		want  []string // exact expected ids, best first
	}{
		{"exact term wins", Query{Text: "closed channel panic"}, []string{"chan", "chan2"}},
		{"stemming", Query{Text: "running"}, []string{"run"}},
		{"stopword-only query", Query{Text: "what is the"}, nil},
		{"no match", Query{Text: "kubernetes"}, nil},
		{"empty query", Query{}, nil},
		{"Chinese", Query{Text: "学习"}, []string{"zh"}},
		{"Japanese", Query{Text: "東京"}, []string{"ja"}},
		{"Keep filter", Query{Text: "channel", Keep: func(id string) bool { return id != "chan" }}, []string{"chan2"}},
		{"Top bound", Query{Text: "closed channel", Top: 1}, []string{"chan"}},
		// Counted three times, "map" would put the map doc first; counted once,
		// the shorter slice doc wins.
		{"duplicate terms count once", Query{Text: "map map map slice"}, []string{"slice", "map"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := Search([]*Segment{seg}, tt.query)
			if got := ids(hits); !slices.Equal(got, tt.want) {
				t.Fatalf("Search(%q) = %q, want %q", tt.query.Text, got, tt.want)
			}
			for _, h := range hits {
				if h.Score <= 0 || h.Score != h.Lexical || h.Vector != 0 {
					t.Errorf("hit %+v: want Score == Lexical > 0 and Vector 0", h)
				}
			}
		})
	}
}

func TestSearchTopAndTies(t *testing.T) {
	var docs []Doc
	for _, id := range []string{"g", "c", "e", "a", "f", "b", "d"} {
		docs = append(docs, Doc{ID: id, Text: "identical passage about goroutines"})
	}
	segs := []*Segment{NewSegment(docs[:3]), NewSegment(docs[3:])}
	tests := []struct {
		top  int
		want []string
	}{
		{0, []string{"a", "b", "c", "d", "e"}},
		{-1, []string{"a", "b", "c", "d", "e"}},
		{2, []string{"a", "b"}},
		{100, []string{"a", "b", "c", "d", "e", "f", "g"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("top=", tt.top), func(t *testing.T) {
			for range 3 { // deterministic across calls
				if got := ids(Search(segs, Query{Text: "goroutine", Top: tt.top})); !slices.Equal(got, tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			}
		})
	}
}

// TestBM25Score checks a score against the formula computed by hand.
func TestBM25Score(t *testing.T) {
	seg := NewSegment([]Doc{
		{ID: "a", Text: "alpha alpha beta"},  // length 3
		{ID: "b", Text: "beta gamma"},        // length 2
		{ID: "c", Text: "gamma delta delta"}, // length 3
	})
	n, avgdl := 3.0, 8.0/3
	idf := func(df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }
	part := func(tf, dl, df float64) float64 {
		return idf(df) * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*dl/avgdl))
	}
	want := part(2, 3, 1) + part(1, 3, 2) // alpha (tf 2, df 1) + beta (tf 1, df 2)
	hits := Search([]*Segment{seg}, Query{Text: "alpha beta"})
	if len(hits) != 2 || hits[0].ID != "a" || math.Abs(hits[0].Score-want) > 1e-12 {
		t.Fatalf("hits %+v, want a first with score %v", hits, want)
	}
}

func TestSegmentationInvariance(t *testing.T) {
	passages := loadGoDocs(t)
	rng := rand.New(rand.NewPCG(1, 2))
	docs := make([]Doc, len(passages))
	for i, p := range passages {
		docs[i] = Doc{ID: p.ID, Text: p.Text, Vector: randomVector(rng, 16)}
	}
	whole := []*Segment{NewSegment(docs)}
	// Spread the docs over 7 segments of uneven sizes, in shuffled order, with
	// an empty and a nil segment thrown in.
	shuffled := slices.Clone(docs)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	split := []*Segment{nil, NewSegment(nil)}
	n := len(shuffled)
	for _, cut := range [][2]int{{0, 3}, {3, n / 5}, {n / 5, n/5 + 1}, {n/5 + 1, n / 2}, {n / 2, 3 * n / 4}, {3 * n / 4, n - 10}, {n - 10, n}} {
		split = append(split, NewSegment(shuffled[cut[0]:cut[1]]))
	}

	queries := []Query{
		{Text: "what happens when you send on a closed channel", Top: 20},
		{Text: "zero value of a pointer", Top: 20},
		{Text: "GODEBUG http2client", Top: 20},
		{Text: "frame pointer register", Top: 20},
		{Text: "type parameters constraint interface", Vector: randomVector(rng, 16), Top: 20},
		{Text: "", Vector: randomVector(rng, 16), Top: 10},
	}
	for _, q := range queries {
		want, got := Search(whole, q), Search(split, q)
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("%q: %d hits in one segment, %d over several", q.Text, len(want), len(got))
		}
		for i := range want {
			w, g := want[i], got[i]
			if w.ID != g.ID || math.Abs(w.Score-g.Score) > 1e-9 || math.Abs(w.Lexical-g.Lexical) > 1e-9 || math.Abs(w.Vector-g.Vector) > 1e-9 {
				t.Errorf("%q hit %d: one segment %+v, several %+v", q.Text, i, w, g)
			}
		}
	}
}

func TestHybrid(t *testing.T) {
	docs := []Doc{
		{ID: "A", Text: "quartz quartz quartz", Vector: []float32{0, 1, 0}},
		{ID: "B", Text: "quartz quartz filler", Vector: []float32{1, 0.5, 0}},
		{ID: "C", Text: "quartz filler filler", Vector: []float32{1, 0.1, 0}},
		{ID: "D", Text: "unrelated words here", Vector: []float32{1, 1, 0}},
		{ID: "E", Text: "opposite direction", Vector: []float32{-1, 0, 0}},
	}
	segs := []*Segment{NewSegment(docs[:2]), NewSegment(docs[2:])}
	rrf := func(ranks ...int) float64 {
		s := 0.0
		for _, r := range ranks {
			s += 1 / float64(rrfK+r)
		}
		return s
	}

	t.Run("fused order follows RRF", func(t *testing.T) {
		// Lexical ranking A, B, C; vector ranking C, B, D; E has a negative
		// cosine and no term, A a zero cosine.
		hits := Search(segs, Query{Text: "quartz", Vector: []float32{2, 0, 0}, Top: 10})
		want := []struct {
			id    string
			score float64
		}{{"C", rrf(3, 1)}, {"B", rrf(2, 2)}, {"A", rrf(1)}, {"D", rrf(3)}}
		if len(hits) != len(want) {
			t.Fatalf("hits %v, want %d", ids(hits), len(want))
		}
		for i, w := range want {
			if hits[i].ID != w.id || math.Abs(hits[i].Score-w.score) > 1e-12 {
				t.Errorf("hit %d = %+v, want %s with score %v", i, hits[i], w.id, w.score)
			}
		}
		if h := hits[3]; h.Lexical != 0 || math.Abs(h.Vector-1/math.Sqrt2) > 1e-6 {
			t.Errorf("D: %+v, want Lexical 0 and Vector cos 45° ", h)
		}
		if h := hits[0]; h.Lexical <= 0 || h.Vector < 0.99 {
			t.Errorf("C: %+v, want a BM25 score and a cosine near 1", h)
		}
	})

	t.Run("vector finds a doc without lexical overlap", func(t *testing.T) {
		hits := Search(segs, Query{Text: "nothing matches", Vector: []float32{1, 1, 0}, Top: 1})
		if len(hits) != 1 || hits[0].ID != "D" || hits[0].Lexical != 0 {
			t.Fatalf("hits %+v, want D", hits)
		}
	})

	t.Run("Keep applies to the vector ranking", func(t *testing.T) {
		hits := Search(segs, Query{Vector: []float32{1, 1, 0}, Top: 1, Keep: func(id string) bool { return id != "D" }})
		if len(hits) != 1 || hits[0].ID != "B" {
			t.Fatalf("hits %+v, want B", hits)
		}
	})

	lexical := ids(Search(segs, Query{Text: "quartz", Top: 10}))
	for _, v := range [][]float32{{1, 0}, {1, 0, 0, 0}, {0, 0, 0}, {float32(math.NaN()), 1, 0}, {}} {
		t.Run(fmt.Sprintf("unusable vector %v is ignored", v), func(t *testing.T) {
			hits := Search(segs, Query{Text: "quartz", Vector: v, Top: 10})
			if got := ids(hits); !slices.Equal(got, lexical) {
				t.Fatalf("got %q, want the lexical ranking %q", got, lexical)
			}
			for _, h := range hits {
				if h.Score != h.Lexical || h.Vector != 0 {
					t.Errorf("hit %+v is not lexical-only", h)
				}
			}
		})
	}
}

func TestSegmentVectors(t *testing.T) {
	seg := NewSegment([]Doc{
		{ID: "ok", Text: "x", Vector: []float32{3, 4}},
		{ID: "wrong-dim", Text: "x", Vector: []float32{1, 2, 3}},
		{ID: "zero", Text: "x", Vector: []float32{0, 0}},
		{ID: "inf", Text: "x", Vector: []float32{float32(math.Inf(1)), 0}},
		{ID: "none", Text: "x"},
	})
	hits := Search([]*Segment{seg}, Query{Vector: []float32{3, 4}, Top: 10})
	if len(hits) != 1 || hits[0].ID != "ok" || math.Abs(hits[0].Vector-1) > 1e-6 {
		t.Fatalf("hits %+v, want only ok with cosine 1", hits)
	}
}

func TestSegmentSize(t *testing.T) {
	small := NewSegment([]Doc{{ID: "1", Text: "one short passage"}})
	large := NewSegment([]Doc{
		{ID: "1", Text: "one short passage"},
		{ID: "2", Text: "another passage, about channels and goroutines and maps", Vector: make([]float32, 64)},
	})
	if small.Len() != 1 || large.Len() != 2 || NewSegment(nil).Len() != 0 {
		t.Errorf("Len = %d, %d, want 1, 2", small.Len(), large.Len())
	}
	if small.Bytes() <= 0 || large.Bytes() <= small.Bytes()+4*64 {
		t.Errorf("Bytes = %d, %d: want positive and growing with docs and vectors", small.Bytes(), large.Bytes())
	}
}

func TestConcurrentSearch(t *testing.T) {
	passages := loadGoDocs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var segs []*Segment
	for start := 0; start < len(passages); start += 40 {
		var docs []Doc
		for _, p := range passages[start:min(start+40, len(passages))] {
			docs = append(docs, Doc{ID: p.ID, Text: p.Text, Vector: randomVector(rng, 8)})
		}
		segs = append(segs, NewSegment(docs))
	}
	queries := []Query{
		{Text: "closed channel send panic"},
		{Text: "memory model happens before", Top: 10},
		{Text: "GODEBUG default go.mod", Vector: randomVector(rng, 8)},
		{Text: "assembler frame pointer", Keep: func(id string) bool { return len(id)%2 == 0 }},
	}
	want := make([][]Hit, len(queries))
	for i, q := range queries {
		want[i] = Search(segs, q)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(queries)
				if got := Search(segs, queries[k]); !slices.Equal(got, want[k]) {
					t.Errorf("query %d: concurrent result differs", k)
					return
				}
			}
		})
	}
	wg.Wait()
}

func ids(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func randomVector(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestMerge checks that a merged segment answers every query exactly as the segments it was
// merged from: same hits, same order, same scores to the bit.
func TestMerge(t *testing.T) {
	passages := loadGoDocs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	docs := make([]Doc, len(passages))
	for i, p := range passages {
		docs[i] = Doc{ID: p.ID, Text: p.Text}
		if i%3 != 0 {
			docs[i].Vector = randomVector(rng, 16)
		}
	}
	n := len(docs)
	// Uneven segments, one of them without vectors, an empty and a nil one among them.
	withoutVectors := make([]Doc, 0, n/10)
	for _, d := range docs[n/2 : n/2+n/10] {
		withoutVectors = append(withoutVectors, Doc{ID: d.ID, Text: d.Text})
	}
	segs := []*Segment{NewSegment(docs[:3]), nil, NewSegment(docs[3 : n/5]), NewSegment(nil), NewSegment(docs[n/5 : n/2]),
		NewSegment(withoutVectors), NewSegment(docs[n/2+n/10 : n-7]), NewSegment(docs[n-7:])}
	merged, ok := Merge(segs)
	if !ok || merged.Len() != n {
		t.Fatalf("Merge: %v, %d docs of %d", ok, merged.Len(), n)
	}
	queries := []Query{{Text: "", Vector: randomVector(rng, 16), Top: 10}}
	for _, text := range benchQueries(t, 200) {
		queries = append(queries, Query{Text: text, Top: 20})
	}
	for i := range 20 {
		queries = append(queries, Query{Text: queries[1+i].Text, Vector: randomVector(rng, 16), Top: 20})
	}
	for _, q := range queries {
		want, got := Search(segs, q), Search([]*Segment{merged}, q)
		if !slices.Equal(want, got) {
			t.Fatalf("%q: segments %+v, merged %+v", q.Text, want, got)
		}
	}
	if _, ok := Merge([]*Segment{segs[0], NewSegment([]Doc{{ID: "x", Text: "y", Vector: []float32{1, 2}}})}); ok {
		t.Error("Merge merged vectors of different dimensions")
	}
}

// TestTitle checks that a doc's title is searched as its text is, without counting in the
// doc's length.
func TestTitle(t *testing.T) {
	seg := NewSegment([]Doc{
		{ID: "titled", Title: "ssh_config › Compression", Text: "Specifies whether to use it. The argument must be yes or no."},
		{ID: "plain", Text: "Specifies whether to use it. The argument must be yes or no."},
		{ID: "long title", Title: strings.Repeat("unrelated words ", 50), Text: "Specifies whether to use it. The argument must be yes or no."},
		{ID: "other", Text: "Something else entirely about compression levels and more words here."},
	})
	if hits := Search([]*Segment{seg}, Query{Text: "compression argument", Top: 2}); len(hits) == 0 || hits[0].ID != "titled" {
		t.Errorf("compression argument: got %v, want titled first", hits)
	}
	hits := Search([]*Segment{seg}, Query{Text: "argument", Top: 4})
	scores := map[string]float64{}
	for _, h := range hits {
		scores[h.ID] = h.Score
	}
	if scores["plain"] == 0 || scores["long title"] != scores["plain"] {
		t.Errorf("argument: plain scores %v, long title %v: a title must not count in the doc's length", scores["plain"], scores["long title"])
	}
}
