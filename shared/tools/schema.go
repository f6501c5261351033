package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// ParseSchema is the JSON schema m as the validator reads it; nil when it cannot.
func ParseSchema(m map[string]any) *openapi3.Schema {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var s openapi3.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	return &s
}

// Check checks arguments, a JSON object's text, against schema (none when nil): nil when they
// hold, else an error saying where and what, such as "body.quantity: number must be at least 1".
func Check(schema *openapi3.Schema, arguments string) error {
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	var args any
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return fmt.Errorf("the arguments are not a JSON object: %v", err)
	}
	if schema == nil {
		return nil
	}
	err := schema.VisitJSON(args)
	if err == nil {
		return nil
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		where := strings.Join(se.JSONPointer(), ".")
		if where == "" {
			where = "arguments"
		}
		return fmt.Errorf("%s: %s", where, se.Reason)
	}
	return err
}
