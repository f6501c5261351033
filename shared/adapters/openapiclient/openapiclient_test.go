package openapiclient_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/openapiclient"
	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

// ordersSpec describes ordersAPI; its server is relative, so it is read from where the
// document was.
const ordersSpec = `openapi: 3.0.3
info: {title: Orders, version: "1"}
servers: [{url: /api}]
paths:
  /orders/{id}:
    get:
      operationId: getOrder
      summary: Read an order.
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: X-Trace, in: header, schema: {type: string}}
      responses: {"200": {description: the order}}
  /orders:
    get:
      operationId: listOrders
      summary: List orders.
      parameters:
        - {name: status, in: query, schema: {type: string, enum: [open, shipped]}}
        - {name: tag, in: query, schema: {type: array, items: {type: string}}}
      responses: {"200": {description: the orders}}
    post:
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

// received is a request the orders API got.
type received struct {
	Method, Path, Query, Auth, Trace, Body string
}

// ordersAPI is a real REST service with its OpenAPI document at /openapi.yaml. Order "404" is
// not found, order "slow" answers when the test ends, order "big" is long.
type ordersAPI struct {
	*httptest.Server
	mu   sync.Mutex
	seen []received
}

func startOrders(t *testing.T) *ordersAPI {
	t.Helper()
	o := &ordersAPI{}
	release := make(chan struct{})
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/openapi.yaml" {
			_, _ = io.WriteString(w, ordersSpec)
			return
		}
		body, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.seen = append(o.seen, received{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("X-Trace"), string(body)})
		o.mu.Unlock()
		switch r.URL.Path {
		case "/api/orders/404":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"no such order"}`)
		case "/api/orders/slow":
			<-release
		case "/api/orders/big":
			_, _ = io.WriteString(w, strings.Repeat("line;", 1000))
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true}`)
		}
	}))
	t.Cleanup(func() {
		close(release)
		o.Close()
	})
	return o
}

func (o *ordersAPI) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

func (o *ordersAPI) last() received {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[len(o.seen)-1]
}

func client(allowPrivate bool) *openapiclient.Client {
	return openapiclient.New(safehttp.New(safehttp.Options{AllowPrivate: allowPrivate, Timeout: time.Minute}).HTTPClient())
}

// The document's operations become tools: named by operationId (else method and path), their
// parameters and JSON body one schema with references inlined, GETs read-only; a document read
// from a URL resolves its relative server there.
func TestOperations(t *testing.T) {
	api := startOrders(t)
	ops, fetched, err := client(true).List(context.Background(), tools.Endpoint{SpecURL: api.URL + "/openapi.yaml", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if fetched != ordersSpec {
		t.Fatalf("fetched %q", fetched)
	}
	byName := map[string]tools.Operation{}
	for _, op := range ops {
		byName[op.Name] = op
	}
	get, post := byName["getOrder"], byName["post_orders"]
	if len(ops) != 3 || !get.ReadOnly || !byName["listOrders"].ReadOnly || post.ReadOnly || get.Description != "Read an order." {
		t.Fatalf("operations %+v", ops)
	}
	if get.Binding.Method != "GET" || get.Binding.Path != "/orders/{id}" || get.Binding.Server != api.URL+"/api" {
		t.Fatalf("getOrder binding %+v", get.Binding)
	}
	raw, _ := json.Marshal(post.InputSchema)
	if !strings.Contains(string(raw), `"body":{`) || !strings.Contains(string(raw), `"quantity":{"minimum":1,"type":"integer"}`) ||
		strings.Contains(string(raw), "$ref") || !strings.Contains(string(raw), `"required":["body"]`) {
		t.Fatalf("createOrder's schema %s", raw)
	}
}

// A call goes where the document says, with its parameters in path, query and header, its body
// as JSON and the tool's credentials; an API's 4xx is the operation's own failure; a slow API
// or one behind the guard is a clear error; a long answer is cut.
func TestCall(t *testing.T) {
	api := startOrders(t)
	ctx := context.Background()
	e := tools.Endpoint{SpecURL: api.URL + "/openapi.yaml", Timeout: 10 * time.Second, MaxBytes: 1000,
		Headers: map[string]string{"Authorization": "Bearer orders-secret"}}
	ops, _, err := client(true).List(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tools.Operation{}
	for _, op := range ops {
		byName[op.Name] = op
	}
	call := func(c *openapiclient.Client, e tools.Endpoint, op, args string) (tools.Output, error) {
		return c.Call(ctx, e, byName[op], json.RawMessage(args))
	}

	out, err := call(client(true), e, "getOrder", `{"id":"a b","X-Trace":"t-1"}`)
	if got := api.last(); err != nil || out.Text != `{"ok":true}` || out.IsError || got.Method != "GET" || got.Path != "/api/orders/a b" ||
		got.Trace != "t-1" || got.Auth != "Bearer orders-secret" {
		t.Fatalf("getOrder: %+v, %v; the API got %+v", out, err, got)
	}
	withQuery := e
	withQuery.Query = map[string][]string{"api_key": {"k-9"}}
	if _, err := call(client(true), withQuery, "listOrders", `{"status":"open","tag":["a","b"]}`); err != nil || api.last().Query != "api_key=k-9&status=open&tag=a&tag=b" {
		t.Fatalf("listOrders: %v; the API got %+v", err, api.last())
	}
	if _, err := call(client(true), e, "post_orders", `{"body":{"item":"tea","quantity":2}}`); err != nil || api.last().Method != "POST" ||
		api.last().Body != `{"item":"tea","quantity":2}` {
		t.Fatalf("post_orders: %v; the API got %+v", err, api.last())
	}
	if out, err := call(client(true), e, "getOrder", `{"id":"404"}`); err != nil || !out.IsError || out.Text != `HTTP 404: {"error":"no such order"}` {
		t.Fatalf("a missing order: %+v, %v", out, err)
	}
	if out, err := call(client(true), e, "getOrder", `{"id":"big"}`); err != nil || !out.Truncated || out.Bytes != 5000 ||
		!strings.Contains(out.Text, "[truncated: the tool answered 5000 bytes; the first 1000 are shown]") {
		t.Fatalf("a long answer: %+v, %v", out, err)
	}
	slow := e
	slow.Timeout = 300 * time.Millisecond
	if _, err := call(client(true), slow, "getOrder", `{"id":"slow"}`); apperr.As(err).Code != "api_timeout" {
		t.Fatalf("a slow API: %v", err)
	}
	before := api.count()
	if _, err := call(client(false), e, "getOrder", `{"id":"1"}`); apperr.As(err).Code != "api_unreachable" || strings.Contains(apperr.As(err).Message, "127.0.0.1") {
		t.Fatalf("a private address through the guard: %v", err)
	}
	if api.count() != before {
		t.Fatal("the guarded client reached the private address")
	}
}

// A document that is not a valid OpenAPI 3 document is refused with its problems.
func TestInvalidDocuments(t *testing.T) {
	for _, tt := range []struct {
		name, spec, problem string
	}{
		{"NotYAML", "{{{", "is not an OpenAPI document"},
		{"Swagger2", `{"swagger":"2.0","info":{"title":"x","version":"1"},"paths":{}}`, "must be OpenAPI 3.0 or 3.1"},
		{"NoOperations", "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\n", "describes no operations"},
		{"BadPath", "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a/{id}:\n    get:\n      responses: {'200': {description: ok}}\n", "/a/{id}"},
		{"MissingRef", "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    post:\n      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Nope'}}}}\n      responses: {'200': {description: ok}}\n", "Nope"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := client(true).List(context.Background(), tools.Endpoint{Spec: tt.spec, Timeout: time.Second})
			e := apperr.As(err)
			if e.Kind != apperr.Invalid || len(e.Details) == 0 || !strings.Contains(e.Details[0].Problem, tt.problem) {
				t.Fatalf("error %v (%+v), want a problem with %q", err, e.Details, tt.problem)
			}
		})
	}
}
