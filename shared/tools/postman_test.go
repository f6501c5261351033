package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

const postmanSchema = `"info": {"name": "Shop", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"}`

// A collection's requests become an OpenAPI document's operations: paths with their variables
// as parameters (:id and {{id}}), enabled queries and headers (not those the call sets), JSON
// bodies as schemas, the server resolved from the collection's variables or a raw URL.
func TestFromPostman(t *testing.T) {
	collection := `{` + postmanSchema + `,
	  "variable": [{"key": "base", "value": "https://shop.example.com/api"}],
	  "item": [
	    {"name": "Find customer", "request": {"method": "GET", "url": {"host": ["{{base}}"], "path": ["customers", "{{customerId}}"],
	      "query": [{"key": "expand", "value": "orders"}, {"key": "debug", "value": "1", "disabled": true}]},
	      "header": [{"key": "X-Trace", "value": "t"}, {"key": "Authorization", "value": "Bearer x"}]}},
	    {"name": "Folder", "item": [
	      {"name": "Add note", "request": {"method": "POST", "url": {"raw": "{{base}}/customers/:id/notes", "host": ["{{base}}"], "path": ["customers", ":id", "notes"]},
	        "body": {"mode": "raw", "raw": "{\"text\": \"hi\", \"pinned\": true, \"tags\": [\"a\"], \"weight\": 1.5}"}}}
	    ]}
	  ]}`
	spec, err := tools.FromPostman([]byte(collection), "postmanCollection")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []struct{ URL string }
		Paths   map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Parameters  []struct{ Name, In string }
			RequestBody struct {
				Content map[string]struct{ Schema map[string]any }
			} `json:"requestBody"`
		}
	}
	if err := json.Unmarshal([]byte(spec), &doc); err != nil {
		t.Fatal(err)
	}
	find := doc.Paths["/customers/{customerId}"]["get"]
	note := doc.Paths["/customers/{id}/notes"]["post"]
	params := func(ps []struct{ Name, In string }) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.In+":"+p.Name)
		}
		return strings.Join(out, ",")
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "https://shop.example.com/api" || find.OperationID != "Find_customer" ||
		params(find.Parameters) != "path:customerId,query:expand,header:X-Trace" || note.OperationID != "Add_note" || params(note.Parameters) != "path:id" {
		t.Fatalf("document %s", spec)
	}
	// A collection of raw URLs splits them into the server and the paths.
	raw, err := tools.FromPostman([]byte(`{`+postmanSchema+`, "item": [{"name": "Ping", "request": {"method": "GET", "url": "https://x.example/api/ping/:n?v=1&the%20term={{term}}&v=2#top"}}]}`), "c")
	if err != nil || !strings.Contains(raw, `"servers":[{"url":"https://x.example"}]`) || !strings.Contains(raw, `"/api/ping/{n}"`) ||
		strings.Count(raw, `"in":"query"`) != 2 || !strings.Contains(raw, `"name":"v"`) || !strings.Contains(raw, `"name":"the term"`) {
		t.Fatalf("raw URLs: %s (%v)", raw, err)
	}
	body, _ := json.Marshal(note.RequestBody.Content["application/json"].Schema)
	for _, want := range []string{`"text":{"type":"string"}`, `"pinned":{"type":"boolean"}`, `"tags":{"items":{"type":"string"},"type":"array"}`, `"weight":{"type":"number"}`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("body schema %s lacks %s", body, want)
		}
	}
}

func TestFromPostmanRefuses(t *testing.T) {
	for _, tt := range []struct{ name, collection, problem string }{
		{"NotJSON", `{`, "is not a Postman collection"},
		{"NotAPostmanSchema", `{"info": {"schema": "https://swagger.io"}}`, "v2.0 or v2.1"},
		{"NoRequests", `{` + postmanSchema + `, "item": [{"name": "Empty folder", "item": []}]}`, "has no requests"},
		{"SameRequestTwice", `{` + postmanSchema + `, "item": [{"name": "a", "request": {"method": "GET", "url": "https://x.example/a"}},
		  {"name": "b", "request": {"method": "GET", "url": "https://x.example/a"}}]}`, "a second GET /a"},
		{"URLNeitherStringNorObject", `{` + postmanSchema + `, "item": [{"name": "a", "request": {"method": "GET", "url": 7}}]}`, "neither a string nor an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tools.FromPostman([]byte(tt.collection), "postmanCollection")
			e := apperr.As(err)
			if e.Kind != apperr.Invalid || len(e.Details) == 0 || e.Details[0].Field != "postmanCollection" || !strings.Contains(e.Details[0].Problem, tt.problem) {
				t.Fatalf("error %v (%+v), want a problem with %q", err, e.Details, tt.problem)
			}
		})
	}
}
