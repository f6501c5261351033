package index

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Retrieval-quality floors, held a little below the measured values (see
// TestRetrievalQuality's log) so that a regression of the analyzer or the
// ranking fails the build.
const (
	recallAt5Floor = 0.80 // measured 0.852
	mrrFloor       = 0.60 // measured 0.656
)

// question is one entry of testdata/questions.json: a question as a user
// would ask it and a substring that identifies the passage(s) answering it.
type question struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// flatten collapses runs of white space so that answers match passages
// whatever their line wrapping.
func flatten(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestRetrievalQuality measures recall@5 and MRR of lexical search over the
// documents shipped with the Go distribution, one segment per document, for
// questions written in a user's words rather than the documents'.
func TestRetrievalQuality(t *testing.T) {
	raw, err := os.ReadFile("testdata/questions.json")
	if err != nil {
		t.Fatal(err)
	}
	var questions []question
	if err := json.Unmarshal(raw, &questions); err != nil {
		t.Fatal(err)
	}
	if len(questions) < 25 {
		t.Fatalf("%d questions, want at least 25", len(questions))
	}

	passages := loadGoDocs(t)
	text := make(map[string]string, len(passages))
	var segs []*Segment
	var docs []Doc
	for i, p := range passages {
		text[p.ID] = flatten(p.Text)
		docs = append(docs, Doc{ID: p.ID, Text: p.Text})
		if i == len(passages)-1 || docPrefix(passages[i+1].ID) != docPrefix(p.ID) {
			segs = append(segs, NewSegment(docs))
			docs = nil
		}
	}

	var recalled, reciprocal float64
	for _, q := range questions {
		answer := flatten(q.Answer)
		found := false
		for _, p := range text {
			found = found || strings.Contains(p, answer)
		}
		if !found {
			t.Errorf("answer %q of %q is not in the corpus (did the Go documents change?)", q.Answer, q.Question)
			continue
		}
		rank := 0
		for i, h := range Search(segs, Query{Text: q.Question, Top: 10}) {
			if strings.Contains(text[h.ID], answer) {
				rank = i + 1
				break
			}
		}
		if rank >= 1 && rank <= 5 {
			recalled++
		} else {
			t.Logf("answer at rank %d (0: not in the top 10): %q", rank, q.Question)
		}
		if rank > 0 {
			reciprocal += 1 / float64(rank)
		}
	}
	n := float64(len(questions))
	recall, mrr := recalled/n, reciprocal/n
	t.Logf("%d questions over %d passages: recall@5 %.3f (floor %.2f), MRR@10 %.3f (floor %.2f)",
		len(questions), len(passages), recall, recallAt5Floor, mrr, mrrFloor)
	if recall < recallAt5Floor {
		t.Errorf("recall@5 %.3f is below the floor %.2f", recall, recallAt5Floor)
	}
	if mrr < mrrFloor {
		t.Errorf("MRR %.3f is below the floor %.2f", mrr, mrrFloor)
	}
}

// docPrefix returns the source document part of a passage id.
func docPrefix(id string) string { return id[:strings.LastIndexByte(id, '-')] }
