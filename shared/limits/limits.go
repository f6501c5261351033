// Package limits holds the size checks every resource makes before it writes, on the merged
// result of an update: string lengths in characters, array lengths in items, free-form JSON
// and whole documents in bytes of their JSON text. The limits themselves are the resources'
// (each package's Max constants, listed in docs/limits.md); a field over its limit is an Invalid
// problem naming it (422), a whole document over its limit is TooLarge (413).
package limits

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Text reports field when v has more than max characters.
func Text(p *apperr.Problems, field, v string, max int) {
	if utf8.RuneCountInString(v) > max {
		p.Add(field, "must be at most %d characters", max)
	}
}

// Items reports field when it has more than max items.
func Items(p *apperr.Problems, field string, n, max int) {
	if n > max {
		p.Add(field, "must have at most %d items", max)
	}
}

// Sized is free-form JSON that knows the length of its JSON text (shared/freeform).
type Sized interface{ Size() int }

// JSON reports field when the JSON text of v is more than max bytes.
func JSON(p *apperr.Problems, field string, v Sized, max int) {
	if n := v.Size(); n > max {
		p.Add(field, "must be at most %d bytes of JSON, not %d", max, n)
	}
}

// TotalJSON reports field, a list of free-form values, when their JSON texts together are more
// than max bytes.
func TotalJSON[S Sized](p *apperr.Problems, field string, list []S, max int) {
	n := 0
	for _, v := range list {
		n += v.Size()
	}
	if n > max {
		p.Add(field, "must be at most %d bytes of JSON in all, not %d", max, n)
	}
}

// namedFields is how many of a document's largest fields a TooLarge error names.
const namedFields = 3

// Document returns a TooLarge error coded resource + "_too_large" when the JSON text of doc (the
// resource as it would be stored) is more than max bytes; its details name the document's
// largest fields with their sizes.
func Document(resource string, doc any, max int) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("limits: %s: %w", resource, err)
	}
	if len(raw) <= max {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("limits: %s: %w", resource, err)
	}
	names := slices.SortedFunc(maps.Keys(fields), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(fields[b]), len(fields[a])), cmp.Compare(a, b))
	})
	e := apperr.New(apperr.TooLarge, resource+"_too_large",
		fmt.Sprintf("The %s would be %d bytes of JSON, more than the %d it may hold; details name its largest fields.", resource, len(raw), max))
	for _, name := range names[:min(namedFields, len(names))] {
		e.Details = append(e.Details, apperr.Detail{Field: name, Problem: fmt.Sprintf("takes %d bytes", len(fields[name]))})
	}
	return e
}
