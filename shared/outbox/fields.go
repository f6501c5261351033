package outbox

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is the events of some types whose data is a T: its New is the one way the package that
// declared it (Declare) builds them, so what the catalog says of an event's fields is what the
// event carries.
type Kind[T any] struct{ types []string }

// Declare records that the events of types carry data of type T, as encoding/json writes it,
// and returns their Kind. It is called once per type, at package initialisation, by the
// package that builds the events.
func Declare[T any](types ...string) Kind[T] {
	s := shapeOf(reflect.TypeFor[T](), map[reflect.Type]bool{})
	declared.Lock()
	defer declared.Unlock()
	for _, typ := range types {
		if _, dup := declared.shapes[typ]; dup {
			panic("outbox: the data of " + typ + " is declared twice")
		}
		declared.shapes[typ] = s
	}
	return Kind[T]{types: types}
}

// New returns an event of type typ, one of k's types, about data (see the package's New).
func (k Kind[T]) New(ctx context.Context, typ, projectID, botID string, data T) Event {
	if !slices.Contains(k.types, typ) {
		panic("outbox: " + typ + " events are not declared with this data")
	}
	return New(ctx, typ, projectID, botID, data)
}

var declared = struct {
	sync.RWMutex
	shapes map[string]*shape
}{shapes: map[string]*shape{}}

// EnvelopeFields are the fields every event's envelope has besides data.
var EnvelopeFields = []string{"id", "type", "project_id", "bot_id", "occurred_at", "cause", "omitted"}

// Fields returns the dot paths of the fields of the data of events of type typ, "data."
// first, sorted: an object's own path and its fields' ones; the fields of an array's elements
// under index 0 ("data.actions.0.status"). Below a free-form value (maps, free-form JSON) any
// path may be, which its path and ".*" says ("data.contact.fields.*"). false when typ's data is
// not declared.
func Fields(typ string) ([]string, bool) {
	declared.RLock()
	s, ok := declared.shapes[typ]
	declared.RUnlock()
	if !ok {
		return nil, false
	}
	var out []string
	s.paths("data", &out)
	slices.Sort(out)
	return out, true
}

// Declared lists the event types whose data is declared.
func Declared() []string {
	declared.RLock()
	defer declared.RUnlock()
	return slices.Sorted(maps.Keys(declared.shapes))
}

// Resolve reports whether the dot path is a field the envelope of events of type typ may
// have (a segment of digits indexes an array). When it is not, it returns where the path
// leaves the envelope's shape: the path of the last field it reached ("" for the envelope
// itself) and the names of the fields there (none for a value that has no fields, "0" for
// an array). A type whose data is not declared resolves every path.
func Resolve(typ, path string) (ok bool, at string, fields []string) {
	declared.RLock()
	data, known := declared.shapes[typ]
	declared.RUnlock()
	if !known {
		return true, "", nil
	}
	env := &shape{kind: object, fields: map[string]*shape{"data": data}}
	for _, f := range EnvelopeFields {
		env.fields[f] = &shape{kind: leaf}
	}
	env.fields["cause"] = &shape{kind: array, elem: &shape{kind: leaf}}
	env.fields["omitted"] = env.fields["cause"]
	cur, at := env, ""
	for seg := range strings.SplitSeq(path, ".") {
		var next *shape
		switch cur.kind {
		case open:
			return true, "", nil
		case object:
			next = cur.fields[seg]
		case array:
			if strings.Trim(seg, "0123456789") == "" && seg != "" {
				next = cur.elem
			}
		}
		if next == nil {
			return false, at, cur.names()
		}
		cur = next
		at = strings.TrimPrefix(at+"."+seg, ".")
	}
	return true, "", nil
}

type shapeKind int

const (
	leaf   shapeKind = iota // a string, number, bool or null
	object                  // an object of known fields
	array                   // an array of elem
	open                    // any JSON: free-form objects, maps, values of their own encoding
)

// shape is what a Go type becomes in JSON, as far as field paths go.
type shape struct {
	kind   shapeKind
	fields map[string]*shape
	elem   *shape
}

func (s *shape) names() []string {
	switch s.kind {
	case object:
		return slices.Sorted(maps.Keys(s.fields))
	case array:
		return []string{"0"}
	}
	return nil
}

func (s *shape) paths(prefix string, out *[]string) {
	switch s.kind {
	case open:
		*out = append(*out, prefix+".*")
	case object:
		for name, f := range s.fields {
			*out = append(*out, prefix+"."+name)
			f.paths(prefix+"."+name, out)
		}
	case array:
		if s.elem.kind != leaf {
			s.elem.paths(prefix+".0", out)
		}
	}
}

var (
	marshaler = reflect.TypeFor[json.Marshaler]()
	timeType  = reflect.TypeFor[time.Time]()
)

// shapeOf is t's shape as encoding/json writes t: exported fields under their json names,
// embedded structs' fields promoted, "-" left out. seen holds the struct types being walked: a
// type that holds itself is open below itself.
func shapeOf(t reflect.Type, seen map[reflect.Type]bool) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return &shape{kind: leaf}
	case t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler):
		return &shape{kind: open}
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Map:
		return &shape{kind: open}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &shape{kind: leaf}
		}
		return &shape{kind: array, elem: shapeOf(t.Elem(), seen)}
	case reflect.Struct:
		if seen[t] {
			return &shape{kind: open}
		}
		seen[t] = true
		defer delete(seen, t)
		s := &shape{kind: object, fields: map[string]*shape{}}
		addFields(s, t, seen)
		return s
	}
	return &shape{kind: leaf}
}

// addFields adds the fields of struct t to s: those of embedded structs first, so that a
// field of t's own hides a promoted one of its name, as encoding/json does.
func addFields(s *shape, t reflect.Type, seen map[reflect.Type]bool) {
	var own []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(s, ft, seen)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name != "" {
			f.Name = name
		}
		if strings.Contains(","+opts+",", ",string,") {
			f.Type = reflect.TypeFor[string]()
		}
		own = append(own, f)
	}
	for _, f := range own {
		s.fields[f.Name] = shapeOf(f.Type, seen)
	}
}
