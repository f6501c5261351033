package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// ordersSpec describes the orders service of ordersService.
const ordersSpec = `openapi: 3.1.0
info: {title: Orders, version: "1"}
paths:
  /orders/{id}:
    get:
      operationId: getOrder
      summary: Read an order.
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"200": {description: the order}}
  /orders:
    post:
      operationId: createOrder
      summary: Create an order.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/NewOrder"}
      responses: {"201": {description: created}}
components:
  schemas:
    NewOrder:
      type: object
      required: [item]
      properties:
        item: {type: string}
        quantity: {type: integer, minimum: 1}
`

// ordersService is a real REST service that answers what ordersSpec describes, and keeps what
// reached it.
type ordersService struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func startOrdersService(t *testing.T) *ordersService {
	t.Helper()
	o := &ordersService{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.seen = append(o.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Api-Key")+" "+string(body))
		o.mu.Unlock()
		switch r.Method {
		case http.MethodGet:
			_, _ = io.WriteString(w, `{"id":"`+strings.TrimPrefix(r.URL.Path, "/v2/orders/")+`","status":"shipped"}`)
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"o-7","created":true}`)
		}
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *ordersService) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// An OpenAPI tool's operations are the agent's to call: a GET at once, a POST once approved,
// each as the document says with the tool's API key header; arguments that break the schema are
// refused before any request, and the model is told why.
func TestAgentRunCallsOpenAPITools(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, nil)
	svc := startOrdersService(t)
	a := toolsAPI{c}
	tool := a.create(t, map[string]any{"name": "Orders", "type": "openapi", "config": map[string]any{
		"spec": ordersSpec, "url": svc.URL + "/v2", "auth": map[string]any{"type": "header", "name": "X-Api-Key", "token": mcpSecret}}})
	ops := operations(tool)
	if tool["status"] != "ready" || len(ops) != 2 || ops["getOrder"]["read_only"] != true || ops["createOrder"]["read_only"] != false ||
		tool["config"].(map[string]any)["auth"].(map[string]any)["name"] != "X-Api-Key" {
		t.Fatalf("created %v", tool)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("orders__getOrder", `{"id":"o-1"}`),
		call("orders__createOrder", `{"body":{"quantity":0}}`),
		call("orders__createOrder", `{"body":{"item":"tea","quantity":2}}`),
		{Reply: "Ordered tea."},
	}})
	_, paused := c.chat(t, map[string]any{"message": "Check o-1, then order tea", "reasoning_mode": "agent"})
	if pending, _ := paused["tool"].(map[string]any); paused["requiresApproval"] != true || pending["name"] != "createOrder" || pending["server_label"] != "Orders" {
		t.Fatalf("paused %v", paused)
	}
	if got := svc.requests(); len(got) != 1 || got[0] != "GET /v2/orders/o-1 "+mcpSecret+" " {
		t.Fatalf("before the approval the service got %q", got)
	}
	_, done := c.executeTool(t, map[string]any{"executionId": paused["executionId"], "approve": true})
	if done == nil || done["reply"] != "Ordered tea." {
		t.Fatalf("after the approval %v", done)
	}
	cs := cycles(t, done)
	if len(cs) != 3 || cs[0]["observation"] != `{"id":"o-1","status":"shipped"}` || cs[1]["actionSuccess"] != false ||
		!strings.Contains(cs[1]["observation"].(string), "body.quantity: number must be at least 1") || cs[2]["observation"] != `{"id":"o-7","created":true}` || cs[2]["operation"] != "createOrder" {
		t.Fatalf("cycles %v", cs)
	}
	if got := svc.requests(); len(got) != 2 || got[1] != `POST /v2/orders `+mcpSecret+` {"item":"tea","quantity":2}` {
		t.Fatalf("the service got %q", got)
	}
}

// An http tool is one endpoint of the user's: a GET takes the input schema's properties as its
// query, anything else its arguments' body as JSON, with the tool's credentials; a call that
// changes data waits for approval like any other.
func TestAgentRunCallsHTTPTools(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, nil)
	svc := startOrdersService(t)
	a := toolsAPI{c}
	auth := map[string]any{"type": "header", "name": "X-Api-Key", "token": mcpSecret}
	lookup := a.create(t, map[string]any{"name": "Lookup", "type": "http", "description": "Read an order.", "config": map[string]any{
		"url": svc.URL + "/v2/orders/o-5", "method": "GET", "auth": auth,
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"fields": map[string]any{"type": "string"}}}}})
	hook := a.create(t, map[string]any{"name": "Order hook", "type": "http", "description": "Place an order.", "config": map[string]any{
		"url": svc.URL + "/v2/orders", "auth": auth,
		"input_schema": map[string]any{"type": "object", "required": []any{"item"}, "properties": map[string]any{"item": map[string]any{"type": "string"}}}}})
	if ops := operations(lookup); lookup["status"] != "ready" || ops["call"]["read_only"] != true || lookup["config"].(map[string]any)["method"] != "GET" {
		t.Fatalf("lookup %v", lookup)
	}
	if ops := operations(hook); hook["status"] != "ready" || ops["call"]["read_only"] != false || hook["config"].(map[string]any)["method"] != "POST" {
		t.Fatalf("hook %v", hook)
	}
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("lookup__call", `{"fields":"status"}`),
		call("order-hook__call", `{"body":{"item":"tea"}}`),
		{Reply: "Ordered."},
	}})
	_, paused := c.chat(t, map[string]any{"message": "Check o-5 and order tea", "reasoning_mode": "agent"})
	if pending, _ := paused["tool"].(map[string]any); paused["requiresApproval"] != true || pending["server_label"] != "Order hook" {
		t.Fatalf("paused %v", paused)
	}
	_, done := c.executeTool(t, map[string]any{"executionId": paused["executionId"], "approve": true})
	if done == nil || done["reply"] != "Ordered." {
		t.Fatalf("done %v", done)
	}
	if got := svc.requests(); len(got) != 2 || got[0] != "GET /v2/orders/o-5 "+mcpSecret+" " || got[1] != `POST /v2/orders `+mcpSecret+` {"item":"tea"}` {
		t.Fatalf("the service got %q", got)
	}
}
