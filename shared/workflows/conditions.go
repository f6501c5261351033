package workflows

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// jsonNumberRE is the grammar of a JSON number, the form of a numeric string.
var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// Matches reports whether every condition holds for envelope, the JSON event envelope decoded
// with encoding/json (so its numbers are float64). It is true when conds is empty.
//
// A condition's Field is a dot path into the envelope, resolved by Lookup: "bot_id",
// "data.deal.value", or "data.items.0.name", where a segment of digits indexes an array.
//
// The operators:
//
//   - exists: with Value true, holds when the path resolves, even to null; with Value
//     false, when it does not. A null Value counts as true, the default Validate sets; any
//     other Value that is not a bool fails.
//   - A path that does not resolve fails every other operator, ne included: "ne" means "is
//     present and differs", so a condition never holds on data the event does not carry.
//     Combine it with exists false to also accept a missing field.
//   - eq, ne: JSON equality, or its negation. Numbers are equal when their values are (40000
//     equals 40000.0, whatever the Go types). Strings compare exactly, case-sensitive. A
//     string never equals a number ("40000" is not 40000). Booleans, null, arrays (element by
//     element, in order) and objects (same keys, equal values) compare deeply.
//   - gt, gte, lt, lte: the field and Value are both numbers, compared as numbers. On the
//     field side a string holding a JSON number, such as "40000" or "-12.5e3", counts as that
//     number (no spaces, no "+", no hex); Value must be a number. Anything else fails.
//   - contains: a string field contains Value as a substring, case-sensitive; a number Value
//     is written in decimal without exponent or trailing zeros first (12, 12.5). An array
//     field contains Value when one of its elements equals it, as with eq. Any other field
//     (a number, an object, a bool, null) fails.
//   - in: the field equals, as with eq, one element of Value, an array. A Value that is not
//     an array fails.
//
// An unknown operator fails.
func Matches(conds []Condition, envelope map[string]any) bool {
	return Failing(conds, envelope) < 0
}

// Failing returns the index of the first of conds that does not hold for envelope (as Matches
// says), or -1 when they all hold.
func Failing(conds []Condition, envelope map[string]any) int {
	for i, c := range conds {
		if !matchCondition(c, envelope) {
			return i
		}
	}
	return -1
}

func matchCondition(c Condition, envelope map[string]any) bool {
	field, found := Lookup(envelope, c.Field)
	if c.Operator == OpExists {
		want, ok := true, true
		if c.Value.V != nil {
			want, ok = c.Value.V.(bool)
		}
		return ok && found == want
	}
	if !found {
		return false
	}
	switch c.Operator {
	case OpEq:
		return jsonEqual(field, c.Value.V)
	case OpNe:
		return !jsonEqual(field, c.Value.V)
	case OpGt, OpGte, OpLt, OpLte:
		return compareNumbers(c.Operator, field, c.Value.V)
	case OpContains:
		return containsOperand(field, c.Value.V)
	case OpIn:
		list, ok := asList(c.Value.V)
		if !ok {
			return false
		}
		for _, e := range list {
			if jsonEqual(field, e) {
				return true
			}
		}
	}
	return false
}

func compareNumbers(op string, field, operand any) bool {
	a, ok := fieldNumber(field)
	if !ok {
		return false
	}
	b, ok := anyNumber(operand)
	if !ok {
		return false
	}
	switch op {
	case OpGt:
		return a > b
	case OpGte:
		return a >= b
	case OpLt:
		return a < b
	case OpLte:
		return a <= b
	}
	return false
}

func containsOperand(field, operand any) bool {
	if s, ok := field.(string); ok {
		if sub, ok := operand.(string); ok {
			return strings.Contains(s, sub)
		}
		if sub, ok := numberText(operand); ok {
			return strings.Contains(s, sub)
		}
		return false
	}
	list, ok := asList(field)
	if !ok {
		return false
	}
	for _, e := range list {
		if jsonEqual(e, operand) {
			return true
		}
	}
	return false
}

// Lookup returns the value at path in envelope, and whether the path resolves; a path that
// resolves to null returns nil, true. path is a dot path of FieldPathPattern: each segment is
// the key of an object, or, on an array, a segment of digits is a zero-based index. A path
// that is not a valid dot path, or that goes through a missing key, an index out of range,
// or a value that is neither object nor array, does not resolve.
func Lookup(envelope map[string]any, path string) (any, bool) {
	if envelope == nil || !fieldPathRE.MatchString(path) {
		return nil, false
	}
	var cur any = envelope
	for seg := range strings.SplitSeq(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[seg]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			next, ok := indexSegment(v, seg)
			if !ok {
				return nil, false
			}
			cur = next
		default:
			if obj, ok := asObject(cur); ok {
				next, ok := obj[seg]
				if !ok {
					return nil, false
				}
				cur = next
				continue
			}
			list, ok := asList(cur)
			if !ok {
				return nil, false
			}
			next, ok := indexSegment(list, seg)
			if !ok {
				return nil, false
			}
			cur = next
		}
	}
	return cur, true
}

func indexSegment(list []any, seg string) (any, bool) {
	if strings.Trim(seg, "0123456789") != "" {
		return nil, false
	}
	i, err := strconv.Atoi(seg)
	if err != nil || i < 0 || i >= len(list) {
		return nil, false
	}
	return list[i], true
}

// jsonEqual reports whether a and b are equal as JSON values: numbers by value, whatever their
// Go types, strings exactly, arrays and objects deeply.
func jsonEqual(a, b any) bool {
	if x, ok := anyNumber(a); ok {
		y, ok := anyNumber(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	if x, ok := asObject(a); ok {
		y, ok := asObject(b)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	if x, ok := asList(a); ok {
		y, ok := asList(b)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// anyNumber returns v as a float64 when it is a number of any Go numeric type or a json.Number.
func anyNumber(v any) (float64, bool) {
	if f, ok := number(v); ok {
		return f, true
	}
	switch n := v.(type) {
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// fieldNumber returns the number an event field holds: a number, or a string holding a JSON
// number.
func fieldNumber(v any) (float64, bool) {
	if s, ok := v.(string); ok {
		if !jsonNumberRE.MatchString(s) {
			return 0, false
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	return anyNumber(v)
}

// numberText writes a number in decimal without exponent or trailing zeros: 12, 12.5, 40000.
func numberText(v any) (string, bool) {
	switch n := v.(type) {
	case int:
		return strconv.FormatInt(int64(n), 10), true
	case int8:
		return strconv.FormatInt(int64(n), 10), true
	case int16:
		return strconv.FormatInt(int64(n), 10), true
	case int32:
		return strconv.FormatInt(int64(n), 10), true
	case int64:
		return strconv.FormatInt(n, 10), true
	case uint:
		return strconv.FormatUint(uint64(n), 10), true
	case uint8:
		return strconv.FormatUint(uint64(n), 10), true
	case uint16:
		return strconv.FormatUint(uint64(n), 10), true
	case uint32:
		return strconv.FormatUint(uint64(n), 10), true
	case uint64:
		return strconv.FormatUint(n, 10), true
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return strconv.FormatInt(i, 10), true
		}
	case float32:
		return strconv.FormatFloat(float64(n), 'f', -1, 32), true
	}
	f, ok := anyNumber(v)
	if !ok {
		return "", false
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}

// asList returns v as a []any when it is an array: a []any, or another slice or array type
// such as a named []any (bson.A) or a []string. Byte slices are not arrays.
func asList(v any) ([]any, bool) {
	if list, ok := v.([]any); ok {
		return list, true
	}
	rv := reflect.ValueOf(v)
	if (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) || rv.Type().Elem().Kind() == reflect.Uint8 {
		return nil, false
	}
	if rv.Kind() == reflect.Slice && rv.IsNil() {
		return nil, false
	}
	list := make([]any, rv.Len())
	for i := range list {
		list[i] = rv.Index(i).Interface()
	}
	return list, true
}

// asObject returns v as a map[string]any when it is an object: a map[string]any, or another
// map type with string keys such as bson.M.
func asObject(v any) (map[string]any, bool) {
	if obj, ok := v.(map[string]any); ok {
		return obj, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String || rv.IsNil() {
		return nil, false
	}
	obj := make(map[string]any, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		obj[iter.Key().String()] = iter.Value().Interface()
	}
	return obj, true
}
