package tools

import (
	"bytes"
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// The shape of what a tool is read from, and of what it offers, is bounded: reading a document
// costs more than its size (the loader's work grows faster than the nesting, and a schema's
// references inline into copies of what they name), so its nesting and what it inlines into are
// checked before that work, and an operation's input schema is offered to the model only within
// the same bounds.
const (
	// MaxDepth bounds the nesting of objects and arrays: of an OpenAPI document or a Postman
	// collection (YAML aliases followed), and of an operation's input schema, its references
	// inlined.
	MaxDepth = 64
	// MaxDocumentObjects bounds the objects and arrays of an OpenAPI document or a Postman
	// collection (YAML aliases expanded): reading one costs the loader some 7 KB and 50 µs.
	MaxDocumentObjects = 10000
	// MaxSchemaValues bounds the values (objects, arrays, strings, numbers, ...) of one
	// operation's input schema, its references inlined.
	MaxSchemaValues = 5000
	// MaxSpecSchemaValues bounds the values of all the input schemas of one document's
	// operations, their references inlined.
	MaxSpecSchemaValues = 25000
)

// CheckDocument is an Invalid error (of field) when raw, a JSON or YAML document, is nested
// deeper than MaxDepth or has more than MaxDocumentObjects objects and arrays (YAML aliases
// expanded). It reads raw without building it.
func CheckDocument(raw []byte, field string) error {
	if problem := documentProblem(raw); problem != "" {
		return apperr.Invalidf(field, "%s", problem)
	}
	return nil
}

// documentProblem is what CheckDocument finds wrong with raw; empty when nothing is.
func documentProblem(raw []byte) string {
	var depth, objects int
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		depth, objects = jsonShape(trimmed)
	} else {
		var root yaml.Node
		if yaml.Unmarshal(raw, &root) != nil {
			// Neither JSON nor YAML: its reader refuses it, at no cost.
			return ""
		}
		m := yamlMeasure{memo: map[*yaml.Node][2]int{}}
		depth, objects = m.measure(&root, 0)
	}
	switch {
	case depth > MaxDepth:
		return fmt.Sprintf("is nested deeper than %d levels (the limit)", MaxDepth)
	case objects > MaxDocumentObjects:
		return fmt.Sprintf("has more than %d objects and arrays (the limit)", MaxDocumentObjects)
	}
	return ""
}

// jsonShape is the deepest nesting of objects and arrays in raw, valid JSON, and their number.
func jsonShape(raw []byte) (deepest, objects int) {
	depth := 0
	inString, escaped := false, false
	for _, b := range raw {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
		case inString:
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			objects++
			deepest = max(deepest, depth)
		case b == '}' || b == ']':
			depth--
		}
	}
	return deepest, objects
}

// yamlMeasure measures YAML nodes, each anchored node once however many aliases name it.
type yamlMeasure struct {
	memo map[*yaml.Node][2]int
	// open are the nodes being measured: an alias to one of them is a cycle.
	open []*yaml.Node
}

// measure is the nesting depth of n (at depth at) and its number of mappings and sequences,
// aliases followed; both stop growing past their limits.
func (m *yamlMeasure) measure(n *yaml.Node, at int) (depth, objects int) {
	if n == nil {
		return 0, 0
	}
	if n.Kind == yaml.AliasNode {
		for _, o := range m.open {
			if o == n.Alias {
				// A cycle: expanded, it is deeper than any limit.
				return MaxDepth + 1, MaxDocumentObjects + 1
			}
		}
		return m.measure(n.Alias, at)
	}
	if r, ok := m.memo[n]; ok {
		return r[0], r[1]
	}
	if at > MaxDepth {
		return 1, 1
	}
	m.open = append(m.open, n)
	for _, c := range n.Content {
		d, o := m.measure(c, at+1)
		depth, objects = max(depth, d), min(objects+o, MaxDocumentObjects+1)
	}
	m.open = m.open[:len(m.open)-1]
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		depth++
		objects = min(objects+1, MaxDocumentObjects+1)
	}
	m.memo[n] = [2]int{depth, objects}
	return depth, objects
}

// SchemaProblem is what makes schema, an operation's input schema, too large to offer: nested
// deeper than MaxDepth or with more than MaxSchemaValues values; empty when nothing does. It
// stops reading at the first limit crossed.
func SchemaProblem(schema map[string]any) string {
	values := 0
	var walk func(v any, depth int) string
	walk = func(v any, depth int) string {
		if values++; values > MaxSchemaValues {
			return fmt.Sprintf("has more than %d values (the limit)", MaxSchemaValues)
		}
		var children []any
		switch x := v.(type) {
		case map[string]any:
			for _, c := range x {
				children = append(children, c)
			}
		case []any:
			children = x
		default:
			return ""
		}
		if depth > MaxDepth {
			return fmt.Sprintf("is nested deeper than %d levels (the limit)", MaxDepth)
		}
		for _, c := range children {
			if p := walk(c, depth+1); p != "" {
				return p
			}
		}
		return ""
	}
	return walk(map[string]any(schema), 1)
}
