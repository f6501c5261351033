package apperr

import (
	"encoding/json"
	"errors"
	"strings"
	"unicode"
)

// JSONField turns a type error of encoding/json, decoding the value at prefix (empty for a
// whole body), into an Invalid error naming the field and the JSON type it must be, never a Go
// type; it returns nil for other errors.
func JSONField(prefix string, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return nil
	}
	path := jsonPath(te.Field)
	switch {
	case prefix == "":
	case path == "":
		path = prefix
	default:
		path = prefix + "." + path
	}
	if path == "" {
		return nil
	}
	return Invalidf(path, "must be %s", jsonTypeName(te.Type.Kind().String()))
}

// jsonPath turns encoding/json's field path into the body's: the names of embedded structs
// (capitalised Go type names; JSON names here are snake_case) are not part of the body.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && !unicode.IsUpper([]rune(p)[0]) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return "of another type"
}
