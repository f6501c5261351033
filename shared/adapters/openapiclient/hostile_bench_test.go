package openapiclient_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/openapiclient"
	"github.com/agentplane/agentplane/shared/tools"
)

// BenchmarkHostileDocuments reads documents built to be costly: each is refused, and what it
// takes (time, B/op) is what a request carrying it costs.
func BenchmarkHostileDocuments(b *testing.B) {
	c := openapiclient.New(nil)
	self := `{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{"/a":{"post":{"requestBody":{"content":{"application/json":{` +
		`"schema":{"$ref":"#/components/schemas/S"}}}},"responses":{"200":{"description":"ok"}}}}},"components":{"schemas":{"S":{"type":"object",` +
		`"properties":{"a":{"$ref":"#/components/schemas/S"},"b":{"$ref":"#/components/schemas/S"},"c":{"$ref":"#/components/schemas/S"},` +
		`"d":{"$ref":"#/components/schemas/S"},"e":{"$ref":"#/components/schemas/S"}}}}}}`
	body := func(schema string) string {
		return `{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{"/a":{"post":{"requestBody":{"content":{"application/json":{` +
			`"schema":` + schema + `}}},"responses":{"200":{"description":"ok"}}}}}}`
	}
	deep := `{"type":"string"}`
	for range 3000 {
		deep = `{"type":"object","properties":{"x":` + deep + `}}`
	}
	var wide, fewer strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&wide, `,"p%d":{"type":"string"}`, i)
		if i < 2400 {
			fmt.Fprintf(&fewer, `,"p%d":{"type":"string"}`, i)
		}
	}
	for _, doc := range []struct{ name, spec string }{
		{"SelfReference", self},
		{"Nested3000", body(deep)},
		{"Wide40000", body(`{"type":"object","properties":{` + wide.String()[1:] + `}}`)},
		{"Wide2400Accepted", body(`{"type":"object","properties":{` + fewer.String()[1:] + `}}`)},
	} {
		b.Run(doc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, err := c.List(context.Background(), tools.Endpoint{Spec: doc.spec})
				if (err == nil) != strings.HasSuffix(doc.name, "Accepted") {
					b.Fatal(err)
				}
			}
		})
	}
}
