package index

import (
	"math"
	"testing"
)

// TestExplain checks that an explanation adds up to the score Search gives, term by term and
// field by field, related terms included.
func TestExplain(t *testing.T) {
	docs := [][]Doc{
		{
			{ID: "a", Title: "tar › OPTIONS › --remove-files", Text: "Remove files from disk after adding them to the archive."},
			{ID: "b", Text: "Extract files from an archive into the current directory. Files are extracted in order."},
		},
		{
			{ID: "c", Title: "FAQ", Text: "Use a folder of your own: the directory must exist before you extract."},
			{ID: "d", Text: "Nothing about the question at all, only unrelated words."},
		},
	}
	byID := map[string]Doc{}
	var segs []*Segment
	for _, ds := range docs {
		for _, d := range ds {
			byID[d.ID] = d
		}
		segs = append(segs, NewSegment(ds))
	}
	q := Query{Text: "how do I unpack files into a folder", Top: 4}
	hits := Search(segs, q)
	if len(hits) < 3 {
		t.Fatalf("hits = %v, want a, b and c", hits)
	}
	for _, h := range hits {
		e := Explain(segs, q, byID[h.ID])
		if math.Abs(e.Lexical-h.Lexical) > 1e-9 {
			t.Errorf("%s: explained %v, scored %v", h.ID, e.Lexical, h.Lexical)
		}
		sum := 0.0
		for _, ts := range e.Terms {
			sum += ts.Score
		}
		if math.Abs(sum-e.Lexical) > 1e-9 {
			t.Errorf("%s: terms add up to %v, lexical %v", h.ID, sum, e.Lexical)
		}
	}
	e := Explain(segs, q, byID["c"])
	want := map[string]TermScore{"folder": {Text: 1}, "directori": {Related: "folder", Text: 1}, "extract": {Related: "unpack", Text: 1}}
	if len(e.Terms) != len(want) {
		t.Errorf("c: terms %+v, want %v", e.Terms, want)
	}
	for _, ts := range e.Terms {
		if w, ok := want[ts.Term]; !ok || ts.Related != w.Related || ts.Text != w.Text || ts.Title != 0 || ts.IDF <= 0 {
			t.Errorf("c: term %+v, want %+v", ts, w)
		}
	}
	if a := Explain(segs, q, byID["a"]); a.Length != 5 || a.AvgLength <= 0 {
		t.Errorf("a: length %d (want 5: its text, stopwords dropped, not its title), average %v", a.Length, a.AvgLength)
	}
	if a := Explain(segs, Query{Text: "remove files"}, byID["a"]); len(a.Terms) != 2 || a.Terms[0].Title != 1 || a.Terms[0].Text != 1 {
		t.Errorf("a for remove files: %+v, want remove once in the text and once in the title", a.Terms)
	}
}
