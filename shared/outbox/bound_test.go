package outbox

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// decodedBound is bound by decoding: the fields of raw in a map, the largest deleted and the map
// encoded again until it is under MaxData.
func decodedBound(t *testing.T, raw json.RawMessage) (json.RawMessage, []string) {
	if len(raw) <= MaxData {
		return raw, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	names := slices.Collect(maps.Keys(fields))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(fields[b]), len(fields[a])), strings.Compare(a, b))
	})
	var omitted []string
	for _, name := range names {
		if len(raw) <= MaxData {
			break
		}
		delete(fields, name)
		omitted = append(omitted, name)
		var err error
		if raw, err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
	}
	return raw, omitted
}

// bound leaves the data and names the fields that decoding the data, deleting its largest
// fields and encoding it again would: for fields of every JSON type, with escapes, brackets in
// strings and nested objects, of equal and of different sizes, as large as a source's text.
func TestBoundAsDecoded(t *testing.T) {
	big := strings.Repeat("x", MaxData)
	tricky := `a "quoted" \ back}slash] {brace} [bracket], <html> & é ` + "\u2028\t\n"
	type source struct {
		ID      string            `json:"id"`
		Title   string            `json:"title"`
		Source  string            `json:"source"`
		Content string            `json:"content"`
		Links   []map[string]any  `json:"links"`
		Tags    []string          `json:"tags"`
		Tokens  int               `json:"tokens"`
		Meta    map[string]string `json:"meta"`
		Empty   *string           `json:"empty"`
		OK      bool              `json:"ok"`
	}
	text := strings.Repeat(tricky, 220<<10/len(tricky))
	inputs := map[string]any{
		"small":        map[string]any{"uuid": "u1", "text": "short"},
		"one large":    map[string]any{"uuid": "u1", "text": big},
		"nested large": map[string]any{"uuid": "u1", "n": map[string]any{"a": []any{big, 1.5, nil, true, map[string]any{"}": "]"}}}, "t": tricky},
		"just over":    map[string]any{"uuid": "u1", "a": big[:MaxData/2], "b": big[:MaxData/2-100], "c": big[:200], "d": tricky},
		"equal sizes":  map[string]any{"z": big[:MaxData/2], "y": big[:MaxData/2], "x": big[:MaxData/2], "w": 1},
		"source": source{ID: "s1", Title: tricky, Source: text, Content: text, Links: []map[string]any{{"url": "https://e.x/?a=1&b={2}", "tokens": 3}},
			Tags: []string{"a", tricky}, Tokens: 57000, Meta: map[string]string{"k": big[:3000]}, OK: true},
		"source, one large": source{ID: "s1", Source: text, Tags: []string{}},
	}
	for name, data := range inputs {
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		got, gotOmitted := bound(raw)
		want, wantOmitted := decodedBound(t, raw)
		if !bytes.Equal(got, want) || !slices.Equal(gotOmitted, wantOmitted) {
			t.Errorf("%s: %.200s omitting %v, decoding gives %.200s omitting %v", name, got, gotOmitted, want, wantOmitted)
		}
	}
}
