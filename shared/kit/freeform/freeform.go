// Package freeform holds the free-form JSON that users put in resources (an agent's
// integrations and navigation links, a workflow's action params and condition values): any JSON,
// with any keys, dots, dollar signs, empty strings and unicode included. Its JSON text is what
// its size limits measure (Size), and what the store keeps (shared/store registers the codec),
// so that every key round-trips exactly and nothing a user sends becomes a document key.
package freeform

import "encoding/json"

// Object is a free-form JSON object. As JSON it is the object itself.
type Object map[string]any

// Size is the length in bytes of o's JSON text.
func (o Object) Size() int { return size(map[string]any(o)) }

// Value is any free-form JSON value: an object, an array, a string, a number, a boolean or
// null (V is then nil). As JSON it is the value itself. Objects and arrays inside it are
// map[string]any and []any, numbers float64.
type Value struct{ V any }

// MarshalJSON writes the value.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.V) }

// UnmarshalJSON reads any JSON value; null gives a nil V.
func (v *Value) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &v.V) }

// Size is the length in bytes of v's JSON text.
func (v Value) Size() int { return size(v.V) }

func size(v any) int {
	text, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(text)
}
