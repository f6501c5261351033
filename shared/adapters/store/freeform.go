package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// registry is the driver's default registry, but for free-form values (shared/freeform): MongoDB
// and FerretDB refuse or misread keys with dots, dollar signs or nothing at all as document keys,
// so a free-form value is stored as its JSON text (BSON binary, subtype 0) and decoded back from
// it, and every key round-trips exactly. Values stored before, as BSON documents, arrays or
// scalars, are still read.
var registry = newRegistry()

func newRegistry() *bson.Registry {
	r := bson.NewRegistry()
	object, value := reflect.TypeFor[freeform.Object](), reflect.TypeFor[freeform.Value]()
	r.RegisterTypeEncoder(object, bson.ValueEncoderFunc(encodeFreeform))
	r.RegisterTypeEncoder(value, bson.ValueEncoderFunc(encodeFreeform))
	r.RegisterTypeDecoder(object, bson.ValueDecoderFunc(func(dc bson.DecodeContext, vr bson.ValueReader, v reflect.Value) error {
		var m map[string]any
		if err := decodeFreeform(dc, vr, &m); err != nil {
			return err
		}
		v.Set(reflect.ValueOf(freeform.Object(m)))
		return nil
	}))
	r.RegisterTypeDecoder(value, bson.ValueDecoderFunc(func(dc bson.DecodeContext, vr bson.ValueReader, v reflect.Value) error {
		var x any
		if err := decodeFreeform(dc, vr, &x); err != nil {
			return err
		}
		v.Set(reflect.ValueOf(freeform.Value{V: x}))
		return nil
	}))
	registerMessages(r)
	return r
}

// encodeFreeform writes a free-form value as its JSON text.
func encodeFreeform(_ bson.EncodeContext, vw bson.ValueWriter, v reflect.Value) error {
	text, err := json.Marshal(v.Interface())
	if err != nil {
		return fmt.Errorf("freeform: %w", err)
	}
	return vw.WriteBinaryWithSubtype(text, bson.TypeBinaryGeneric)
}

// decodeFreeform reads a free-form value into dst: JSON text when it is binary, else a value
// stored before free-form values were JSON text, read through its relaxed extended JSON (what
// plain JSON numbers, strings, booleans, objects and arrays were stored as).
func decodeFreeform(dc bson.DecodeContext, vr bson.ValueReader, dst any) error {
	var raw bson.RawValue
	dec, err := dc.LookupDecoder(reflect.TypeFor[bson.RawValue]())
	if err != nil {
		return err
	}
	if err := dec.DecodeValue(dc, vr, reflect.ValueOf(&raw).Elem()); err != nil {
		return err
	}
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

// marshal encodes doc with the store's registry.
func marshal(doc any) (bson.Raw, error) {
	var buf bytes.Buffer
	enc := bson.NewEncoder(bson.NewDocumentWriter(&buf))
	enc.SetRegistry(registry)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
