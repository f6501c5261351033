// Package flex holds JSON types that are strict about type and lenient about form, as the clients
// of the interface need: an integer flag may arrive as 1 or as "1".
package flex

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
)

// Int is an integer that also accepts its decimal string ("1", " 42 "). An empty string counts
// as absent when the field is a *Int: use Int through a pointer so null, "" and absence all
// leave it nil.
type Int int

// UnmarshalJSON accepts a JSON integer or a string holding one.
func (i *Int) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return typeError("string")
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace([]byte(s))))
		if err != nil {
			return typeError("string")
		}
		*i = Int(n)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return typeError(kindOf(b))
	}
	v, err := strconv.Atoi(n.String())
	if err != nil {
		return typeError("number")
	}
	*i = Int(v)
	return nil
}

// OptInt is a *Int field that treats "" like null: absent.
type OptInt struct {
	Value Int
	Set   bool
}

// UnmarshalJSON records the value; "" leaves the field unset.
func (o *OptInt) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); bytes.Equal(t, []byte(`""`)) || bytes.Equal(t, []byte("null")) {
		*o = OptInt{}
		return nil
	}
	if err := o.Value.UnmarshalJSON(b); err != nil {
		return err
	}
	o.Set = true
	return nil
}

// OptFlag is an OptInt holding a 0/1 flag, which also takes true and false for 1 and 0: a
// client that sends one request body for every call (BoostGPT's) carries the chat's boolean
// `memory` into an agent's update, whose `memory` is such a flag.
type OptFlag struct{ OptInt }

// UnmarshalJSON takes true and false, else what OptInt takes.
func (o *OptFlag) UnmarshalJSON(b []byte) error {
	switch string(bytes.TrimSpace(b)) {
	case "true":
		o.OptInt = OptInt{Value: 1, Set: true}
	case "false":
		o.OptInt = OptInt{Value: 0, Set: true}
	default:
		return o.OptInt.UnmarshalJSON(b)
	}
	return nil
}

// Ptr returns the value as *int, nil when unset.
func (o OptInt) Ptr() *int {
	if !o.Set {
		return nil
	}
	v := int(o.Value)
	return &v
}

func typeError(value string) error {
	return &json.UnmarshalTypeError{Value: value, Type: reflect.TypeFor[int]()}
}

func kindOf(b []byte) string {
	switch {
	case len(b) == 0:
		return "empty"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	}
	return "value"
}
