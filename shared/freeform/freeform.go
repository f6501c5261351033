// Package freeform holds the free-form JSON that users put in resources (an agent's
// integrations and navigation links, a workflow's action params and condition values): any JSON,
// with any keys, dots, dollar signs, empty strings and unicode included.
//
// MongoDB and FerretDB refuse or misread such keys as document keys, so a free-form value is
// stored as its JSON text (BSON binary, subtype 0) and decoded back from it: every key
// round-trips exactly and nothing a user sends becomes a document key. Values stored before, as
// BSON documents, arrays or scalars, are still read. Its JSON text is also what its size limits
// measure (Size).
package freeform

import (
	"encoding/json"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Object is a free-form JSON object. As JSON it is the object itself.
type Object map[string]any

// MarshalBSONValue stores o as its JSON text.
func (o Object) MarshalBSONValue() (byte, []byte, error) { return marshal(map[string]any(o)) }

// UnmarshalBSONValue reads o from its JSON text, or from a BSON document stored before.
func (o *Object) UnmarshalBSONValue(typ byte, data []byte) error {
	var m map[string]any
	if err := unmarshal(typ, data, &m); err != nil {
		return err
	}
	*o = m
	return nil
}

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

// MarshalBSONValue stores v as its JSON text.
func (v Value) MarshalBSONValue() (byte, []byte, error) { return marshal(v.V) }

// UnmarshalBSONValue reads v from its JSON text, or from a BSON value stored before.
func (v *Value) UnmarshalBSONValue(typ byte, data []byte) error {
	v.V = nil
	return unmarshal(typ, data, &v.V)
}

// Size is the length in bytes of v's JSON text.
func (v Value) Size() int { return size(v.V) }

func marshal(v any) (byte, []byte, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return 0, nil, fmt.Errorf("freeform: %w", err)
	}
	typ, data, err := bson.MarshalValue(bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: text})
	return byte(typ), data, err
}

// unmarshal decodes the BSON value (typ, data) into dst: JSON text when it is binary, else a
// value stored before free-form values were JSON text, read through its relaxed extended JSON
// (what plain JSON numbers, strings, booleans, objects and arrays were stored as).
func unmarshal(typ byte, data []byte, dst any) error {
	raw := bson.RawValue{Type: bson.Type(typ), Value: data}
	if _, text, ok := raw.BinaryOK(); ok {
		return json.Unmarshal(text, dst)
	}
	doc, err := bson.Marshal(bson.D{{Key: "v", Value: raw}})
	if err != nil {
		return fmt.Errorf("freeform: %w", err)
	}
	ext, err := bson.MarshalExtJSON(bson.Raw(doc), false, false)
	if err != nil {
		return fmt.Errorf("freeform: %w", err)
	}
	var wrapped struct {
		V json.RawMessage `json:"v"`
	}
	if err := json.Unmarshal(ext, &wrapped); err != nil {
		return fmt.Errorf("freeform: %w", err)
	}
	return json.Unmarshal(wrapped.V, dst)
}

func size(v any) int {
	text, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(text)
}
