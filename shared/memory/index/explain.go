package index

import (
	"slices"
	"strings"
)

// Explanation is why a doc scored what it did for a query: its BM25 score term by term.
type Explanation struct {
	// Lexical is the doc's BM25 score, the sum of the scores of Terms.
	Lexical float64 `json:"lexical"`
	// Length is the doc's length in terms (its text's, stopwords excluded) and AvgLength the
	// average over the segments searched: BM25 favours the shorter doc for the same matches.
	Length    int     `json:"length"`
	AvgLength float64 `json:"avg_length"`
	// Terms are the query's terms the doc holds, in query order, its own before related ones.
	Terms []TermScore `json:"terms"`
}

// TermScore is one query term's part of a doc's BM25 score.
type TermScore struct {
	Term string `json:"term"` // the analysed term (lowercased, stemmed)
	// Related is the query word it stands for when it is a related term searched at half
	// weight (see the package documentation), "" for the query's own terms.
	Related string  `json:"related,omitempty"`
	IDF     float64 `json:"idf"`
	// Text and Title are how often the term occurs in each field of the doc.
	Text  int     `json:"text"`
	Title int     `json:"title"`
	Score float64 `json:"score"`
}

// Explain returns why doc, one of the docs of segs, scores what it does for q's text when segs
// are searched: doc must be given with the text and title it was indexed with. Its Lexical
// equals the Lexical of doc's Hit up to rounding.
func Explain(segs []*Segment, q Query, doc Doc) Explanation {
	own := queryTerms(q.Text)
	terms, weights := expand(own)
	var sc scratch
	c0, c1 := sc.corpusStats(segs, terms, weights)
	text, length := termCounts(doc.Text)
	title, _ := termCounts(doc.Title)
	e := Explanation{Length: length, Terms: []TermScore{}}
	if c1 > 0 {
		e.AvgLength = bm25K1 * bm25B / c1
	}
	for i, t := range terms {
		tf := float64(text[t] + titleWeight*title[t])
		if tf == 0 {
			continue
		}
		ts := TermScore{Term: t, Text: text[t], Title: title[t], IDF: sc.w[i] / weights[i] / (bm25K1 + 1),
			Score: sc.w[i] * tf / (tf + c0 + c1*float64(length))}
		if i >= len(own) {
			ts.Related = relatedTo(own, t)
		}
		e.Lexical += ts.Score
		e.Terms = append(e.Terms, ts)
	}
	return e
}

// termCounts returns how often each term occurs in text as NewSegment indexes it (identifier
// parts and compounds included) and the length of text in terms (without them).
func termCounts(text string) (map[string]int, int) {
	var tz tokenizer
	counts := map[string]int{}
	length := 0
	tz.scan(text, func(tok []byte, part bool) {
		if t, ok := term(tok); ok {
			counts[t]++
			if !part {
				length++
			}
		}
	})
	return counts, length
}

// relatedTo returns the query term, or phrase, whose group brought the related term t.
func relatedTo(own []string, t string) string {
	for i, o := range own {
		for _, r := range related[o] {
			if hasPrefix(own[i:], r.phrase) && slices.Contains(r.adds, t) {
				return strings.Join(r.phrase, " ")
			}
		}
	}
	return ""
}
