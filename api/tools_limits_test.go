package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// selfReferencingSpec is 549 bytes whose schema's five properties each name the schema itself:
// inlined, it grows five times at each level.
const selfReferencingSpec = `{"openapi":"3.0.3","info":{"title":"Tree","version":"1"},"paths":{"/nodes":{"post":{
"operationId":"addNode","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Node"}}}},
"responses":{"200":{"description":"ok"}}}}},"components":{"schemas":{"Node":{"type":"object","properties":{
"a":{"$ref":"#/components/schemas/Node"},"b":{"$ref":"#/components/schemas/Node"},"c":{"$ref":"#/components/schemas/Node"},
"d":{"$ref":"#/components/schemas/Node"},"e":{"$ref":"#/components/schemas/Node"}}}}}}`

// nestedSpec is a document whose request body is levels objects deep, inline.
func nestedSpec(levels int) string {
	schema := `{"type":"string"}`
	for range levels {
		schema = `{"type":"object","properties":{"x":` + schema + `}}`
	}
	return `{"openapi":"3.0.3","info":{"title":"Deep","version":"1"},"paths":{"/a":{"post":{"requestBody":{"content":{"application/json":{
"schema":` + schema + `}}},"responses":{"200":{"description":"ok"}}}}}}`
}

// wideSpec is a document whose request body has n properties.
func wideSpec(n int) string {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"Wide","version":"1"},"paths":{"/a":{"post":{"requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}}}},"responses":{"200":{"description":"ok"}}}}}}`)
	return b.String()
}

// laughingSpec is a YAML document of 700 bytes whose aliases expand to 10^9 values.
func laughingSpec() string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: Laughs, version: '1'}\nx-l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "x-l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("paths: {}\n")
	return b.String()
}

// deepPostman is a Postman collection whose one request's raw body is levels objects deep.
func deepPostman(levels int) string {
	body := strings.Repeat(`{"x":`, levels) + "1" + strings.Repeat("}", levels)
	return `{"info":{"name":"Deep","schema":"https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
"item":[{"name":"Send","request":{"method":"POST","url":"https://api.example.com/send","body":{"mode":"raw","raw":` +
		fmt.Sprintf("%q", body) + `}}}]}`
}

// Documents built to make reading them costly are refused with the limit they cross, before
// the work: a schema that names itself five times, nesting 3,000 levels deep, a body of 12,000
// properties, YAML aliases that expand a billion times, a Postman body 1,800 levels deep; as
// hosted servers' documents and as agents' tools alike.
func TestHostileToolDocumentsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct {
		name, route, field, spec, limit string
	}{
		{"SelfReference", "validate-openapi", "openApiSpec", selfReferencingSpec, "more than 5000 values (the limit)"},
		{"Nested", "validate-openapi", "openApiSpec", nestedSpec(3000), "nested deeper than 64 levels (the limit)"},
		{"Wide", "validate-openapi", "openApiSpec", wideSpec(12000), "more than 10000 objects and arrays (the limit)"},
		{"Aliases", "validate-openapi", "openApiSpec", laughingSpec(), "more than 10000 objects and arrays (the limit)"},
		{"PostmanBody", "validate-postman", "postmanCollection", deepPostman(1800), "nested deeper than 28 levels (the limit)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key := map[string]string{"validate-openapi": "openApiSpec", "validate-postman": "postmanCollection"}[tt.route]
			res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/mcp/" + tt.route, Key: b.key,
				Body: map[string]any{key: tt.spec, "project_id": b.project.ID}})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
			if !strings.Contains(string(res.Body), tt.limit) {
				t.Fatalf("the answer does not name the limit %q: %s", tt.limit, res.Body)
			}
		})
	}
	_, c, _ := agentSetup(t, nil)
	res := c.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/tool", Key: c.b.key, Body: c.body(map[string]any{
		"name": "Tree", "type": "openapi", "config": map[string]any{"spec": selfReferencingSpec, "url": "https://tree.example.com"}})})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	expectField(t, res, "config.spec")
	if !strings.Contains(string(res.Body), "addNode") || !strings.Contains(string(res.Body), "more than 5000 values") {
		t.Fatalf("the answer does not name the operation and the limit: %s", res.Body)
	}
}

// An operation stored before schemas were bounded, whose input schema is too large, is not
// offered to the model; the tool's other operations still are, and the run answers.
func TestStoredOversizedOperationNotOffered(t *testing.T) {
	t.Parallel()
	b, c, fake := agentSetup(t, nil)
	svc := startOrdersService(t)
	tool := toolsAPI{c}.create(t, map[string]any{"name": "Orders", "type": "openapi", "config": map[string]any{"spec": ordersSpec, "url": svc.URL}})
	index := -1
	for i, o := range tool["operations"].([]any) {
		if o.(map[string]any)["name"] == "createOrder" {
			index = i
		}
	}
	props := make([]string, 6000)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	huge := `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
	_, err := b.db.Collection("tools").UpdateOne(context.Background(), bson.M{"_id": tool["id"]},
		bson.M{"$set": bson.M{fmt.Sprintf("operations.%d.input_schema", index): bson.Binary{Data: []byte(huge)}}})
	if err != nil || index < 0 {
		t.Fatalf("storing the schema of operation %d: %v", index, err)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{{Reply: "Nothing to order."}}})
	_, reply := c.chat(t, map[string]any{"message": "Order tea", "reasoning_mode": "agent"})
	if reply["reply"] != "Nothing to order." {
		t.Fatalf("reply %v", reply)
	}
	offered := strings.Join(fake.Requests()[0].Tools, " ")
	if !strings.Contains(offered, "orders__getOrder") || strings.Contains(offered, "orders__createOrder") {
		t.Fatalf("the model was offered %s", offered)
	}
}
