package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// placeholderSpace is the white space allowed around a placeholder's path, and trimmed around
// a string that is one placeholder: RE2's \s.
const placeholderSpace = "\t\n\f\r "

// placeholderRE matches one placeholder: {{, optional white space, a dot path of
// FieldPathPattern, optional white space, }}.
var placeholderRE = regexp.MustCompile(`\{\{\s*(` +
	strings.TrimSuffix(strings.TrimPrefix(FieldPathPattern, "^"), "$") + `)\s*\}\}`)

// Render returns a copy of v, the params of an action, with the placeholders in its strings
// replaced by values of envelope, the event envelope decoded with encoding/json. Objects
// (map[string]any) and arrays ([]any) are copied and rendered at every depth; their keys are
// not rendered. Numbers, booleans and null are returned as they are.
//
// # Syntax
//
// A placeholder is "{{", a dot path, and "}}", with optional white space (spaces, tabs, line
// breaks) between the path and the braces: {{data.deal.value}} and {{ data.deal.value }}
// are the same. The dot path is the one of conditions (FieldPathPattern): segments of
// letters, digits and underscores separated by dots, the first starting with a letter or an
// underscore. Each segment is the key of an object, or, on an array, a zero-based index:
// {{data.items.0.name}}. The path resolves as with Lookup, from the envelope's top level:
// {{type}}, {{bot_id}}, {{data.title}}, or {{input.email}} for manual runs.
//
// A string that is exactly one placeholder, apart from white space before and after it,
// becomes the value itself, not its text: "{{data.deal.value}}" gives the number 40000,
// "{{data}}" the whole object (a copy), "{{data.tags}}" the array. When the path does not
// resolve, the value is null (nil).
//
// A placeholder inside a longer string, such as "Deal {{data.title}} won", is replaced by the
// text of its value:
//
//   - a string, as it is (no escaping of any kind);
//   - a number, in decimal without exponent or trailing zeros: 40000, 12.5, -0.25;
//   - a boolean, true or false;
//   - null, and a path that does not resolve, nothing (the empty string);
//   - an object or an array, compact JSON with keys sorted and no HTML escaping:
//     {"a":1,"b":[true,null]}.
//
// Nothing else is special. Text outside placeholders is kept byte for byte. Anything between
// "{{" and "}}" that is not a dot path, such as {{ data.title | upper }}, {{ 1 + 1 }},
// {{data..x}} or {{}}, is not a placeholder and stays as literal text, braces included; so do
// an unclosed "{{" and a lone "}}". There are no expressions, functions, filters, defaults or
// escapes, and a value inserted by a placeholder is never rendered again, even if it holds
// "{{". Placeholders do not nest: in "{{{a}}}" the placeholder is {{a}}, between literal
// braces.
func Render(v any, envelope map[string]any) any {
	return walk(v, func(s string) any { return renderValue(s, envelope) })
}

// walk copies the objects and arrays of v at any depth (named map and slice types as plain
// ones), replacing each string s by leaf(s).
func walk(v any, leaf func(string) any) any {
	switch v := v.(type) {
	case string:
		return leaf(v)
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = walk(e, leaf)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = walk(e, leaf)
		}
		return out
	}
	if obj, ok := asObject(v); ok {
		return walk(obj, leaf)
	}
	if list, ok := asList(v); ok {
		return walk(list, leaf)
	}
	return v
}

// RenderString returns s with every placeholder replaced by the text of its value, as Render
// does inside a longer string: the result is always text, even when s is one placeholder
// ("{{data.deal.value}}" gives "40000", and an unknown path "").
func RenderString(s string, envelope map[string]any) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		path := placeholderRE.FindStringSubmatch(m)[1]
		v, _ := Lookup(envelope, path)
		return valueText(v)
	})
}

// renderValue renders s: the raw value when s is one placeholder, else its text.
func renderValue(s string, envelope map[string]any) any {
	if !strings.Contains(s, "{{") {
		return s
	}
	trimmed := strings.Trim(s, placeholderSpace)
	if loc := placeholderRE.FindStringSubmatchIndex(trimmed); loc != nil && loc[0] == 0 && loc[1] == len(trimmed) {
		v, ok := Lookup(envelope, trimmed[loc[2]:loc[3]])
		if !ok {
			return nil
		}
		return cloneValue(v)
	}
	return RenderString(s, envelope)
}

// valueText is the text of v inside a longer string.
func valueText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	if s, ok := numberText(v); ok {
		return s
	}
	if obj, ok := asObject(v); ok {
		return compactJSON(obj)
	}
	if list, ok := asList(v); ok {
		return compactJSON(list)
	}
	return fmt.Sprint(v)
}

// compactJSON writes v as compact JSON without HTML escaping, or "" when it cannot.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// cloneValue returns a deep copy of the objects and arrays of v, so a rendered value never
// shares them with the envelope.
func cloneValue(v any) any {
	return walk(v, func(s string) any { return s })
}
