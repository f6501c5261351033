package index

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestRelatedGroups checks the hand-written list: every member keeps a term
// after analysis, a phrase at least two (a phrase reduced to one common word
// would relate that word alone), and no member is in its group twice after
// stemming.
func TestRelatedGroups(t *testing.T) {
	for _, g := range relatedGroups {
		if len(g) < 2 {
			t.Errorf("group %q has fewer than two members", g)
		}
		seen := map[string]string{}
		for _, m := range g {
			terms := analyze(m)
			if len(terms) == 0 {
				t.Errorf("member %q of %q has no term after analysis", m, g)
				continue
			}
			if len(strings.Fields(m)) > 1 && len(terms) < 2 {
				t.Errorf("phrase %q of %q keeps only %q after analysis", m, g, terms)
			}
			key := strings.Join(terms, " ")
			if prev, ok := seen[key]; ok {
				t.Errorf("members %q and %q of %q analyse to the same terms %q", prev, m, g, terms)
			}
			seen[key] = m
		}
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name    string
		query   []string
		want    []string
		weights []float64
	}{
		{"word to words", []string{"folder", "size"}, []string{"folder", "size", "directori", "dir"}, []float64{1, 1, relatedWeight, relatedWeight}},
		{"the other way", []string{"directori"}, []string{"directori", "folder", "dir"}, []float64{1, relatedWeight, relatedWeight}},
		{"phrase to word", analyze("get rid of the logs"), []string{"get", "rid", "log", "delet", "remov", "eras", "histori"}, nil},
		{"phrase words apart", analyze("rid me, get going"), []string{"rid", "get", "go"}, nil},
		{"query term not added twice", analyze("folder directory"), []string{"folder", "directori", "dir"}, []float64{1, 1, relatedWeight}},
		{"numbers in words", analyze("four gigabytes"), []string{"four", "gigabyt", "4", "gb", "gib"}, nil},
		{"nothing related", []string{"zebra"}, []string{"zebra"}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, weights := expand(tt.query)
			if !slices.Equal(got, tt.want) {
				t.Errorf("expand(%q) = %q, want %q", tt.query, got, tt.want)
			}
			if tt.weights != nil && !slices.Equal(weights, tt.weights) {
				t.Errorf("expand(%q) weights = %v, want %v", tt.query, weights, tt.weights)
			}
		})
	}
}

// TestRelatedTermsRank checks that related terms find a passage written in
// the other words, both ways, and that a passage using the query's own word
// still ranks first.
func TestRelatedTermsRank(t *testing.T) {
	seg := NewSegment([]Doc{
		{ID: "directory", Text: "Change to the directory before extracting the files."},
		{ID: "folder", Text: "Open the folder and extract the files."},
		{ID: "other", Text: "Print the version and exit."},
		{ID: "noise", Text: "Unrelated notes about colours and shapes."},
	})
	tests := []struct {
		query string
		want  []string
	}{
		{"which folder do I unpack into", []string{"folder", "directory"}},
		{"which directory", []string{"directory", "folder"}},
		{"unpack", []string{"folder", "directory"}}, // a tie, broken by the texts (tieKey)
	}
	for _, tt := range tests {
		var got []string
		for _, h := range Search([]*Segment{seg}, Query{Text: tt.query, Top: 5}) {
			got = append(got, h.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Search(%q) = %q, want %q", tt.query, got, tt.want)
		}
	}
}

// TestQueryTermsAndTerms checks the analysis offered to callers that match texts of their own
// as Search would: a query's terms with their related ones and weights, a text's terms with
// the parts of its identifiers and hyphenated words.
func TestQueryTermsAndTerms(t *testing.T) {
	queries := []struct {
		text string
		want []Weighted
	}{
		{"Which folder, which folder?", []Weighted{{"folder", 1}, {"directori", relatedWeight}, {"dir", relatedWeight}}},
		{"the zebras", []Weighted{{"zebra", 1}}},
		{"What is it?", []Weighted{}},
	}
	for _, tt := range queries {
		if got := QueryTerms(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("QueryTerms(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
	texts := []struct {
		text string
		want []string
	}{
		{"The DefaultGODEBUG setting is built-in.", []string{"built", "builtin", "default", "defaultgodebug", "godebug", "set"}},
		{"Extracting the files, extracted files", []string{"extract", "file"}},
	}
	for _, tt := range texts {
		got := slices.Sorted(maps.Keys(Terms(tt.text)))
		if !slices.Equal(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
