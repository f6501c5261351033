package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// ordersCollection is a Postman collection (v2.1) of ordersService's API, its server a
// collection variable.
const ordersCollection = `{
  "info": {"name": "Orders", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
  "variable": [{"key": "baseUrl", "value": "https://orders.example.com/v2"}],
  "item": [
    {"name": "Orders", "item": [
      {"name": "Get order", "request": {"method": "GET", "header": [{"key": "Accept", "value": "application/json"}],
        "url": {"raw": "{{baseUrl}}/orders/:id", "host": ["{{baseUrl}}"], "path": ["orders", ":id"]}}},
      {"name": "Create order", "request": {"method": "POST",
        "url": {"raw": "{{baseUrl}}/orders?notify=yes", "host": ["{{baseUrl}}"], "path": ["orders"], "query": [{"key": "notify", "value": "yes"}]},
        "body": {"mode": "raw", "raw": "{\"item\": \"tea\", \"quantity\": 2}"}}}
    ]}
  ]
}`

// mcpAPI calls the hosted MCP server routes of the bundle's project.
type mcpAPI struct{ b *bundle }

func (m mcpAPI) do(t *testing.T, method, path string, body map[string]any, status int, code string) map[string]any {
	t.Helper()
	req := apitest.Request{Method: method, Path: "/v1/mcp" + path, Key: m.b.key}
	if body != nil {
		body["project_id"] = m.b.project.ID
		req.Body = body
	} else if !strings.HasPrefix(path, "/connectors") {
		req.Path += "?project_id=" + m.b.project.ID
	}
	res := m.b.client.Do(req)
	expect(t, res, status, code)
	if strings.Contains(string(res.Body), mcpSecret) {
		t.Fatalf("%s %s answers a credential: %s", method, path, res.Body)
	}
	return res.JSON(t)
}

func textOf(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) == 0 {
		t.Fatalf("no content: %+v", r)
	}
	return r.Content[0].(*mcp.TextContent).Text
}

// A project hosts MCP servers made of OpenAPI documents: the official MCP client lists their
// operations as tools and calls them, with the server's credentials, arguments checked first;
// documents that are not valid are refused with their problems; another account reaches none.
func TestHostedMCPServers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := mcpAPI{b}
	svc := startOrdersService(t)
	ctx := context.Background()

	valid := m.do(t, "POST", "/validate-openapi", map[string]any{"openApiSpec": ordersSpec}, http.StatusOK, "")
	if valid["valid"] != true || len(valid["operations"].([]any)) != 2 {
		t.Fatalf("validate %v", valid)
	}
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/mcp/validate-openapi", Key: b.key,
		Body: map[string]any{"openApiSpec": "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a/{id}:\n    get:\n      responses: {'200': {description: ok}}\n"}})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	expectField(t, res, "openApiSpec")

	created := m.do(t, "POST", "/create/from-openapi", map[string]any{"name": "Orders", "openApiSpec": ordersSpec, "baseUrl": svc.URL + "/v2",
		"authType": "header", "authName": "X-Api-Key", "credentials": map[string]any{"token": mcpSecret}}, http.StatusOK, "")
	srv := created["server"].(map[string]any)
	id := srv["id"].(string)
	if created["endpoint"] != "/mcp/"+id || srv["status"] != "ready" || len(srv["operations"].([]any)) != 2 {
		t.Fatalf("created %v", created)
	}
	if list := m.do(t, "GET", "", nil, http.StatusOK, ""); list["total"] != float64(1) {
		t.Fatalf("list %v", list)
	}
	m.do(t, "GET", "/"+id, nil, http.StatusOK, "")

	cs, err := connectMCP(t, b, "/mcp/"+id, b.key)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := cs.ListTools(ctx, nil)
	if err != nil || len(listed.Tools) != 2 {
		t.Fatalf("tools %+v (%v)", listed, err)
	}
	got, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "getOrder", Arguments: map[string]any{"id": "o-1"}})
	if err != nil || got.IsError || textOf(t, got) != `{"id":"o-1","status":"shipped"}` {
		t.Fatalf("getOrder %+v (%v)", got, err)
	}
	refused, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "createOrder", Arguments: map[string]any{"body": map[string]any{"quantity": 0}}})
	if err != nil || !refused.IsError || !strings.Contains(textOf(t, refused), "body.quantity") {
		t.Fatalf("createOrder with bad arguments %+v (%v)", refused, err)
	}
	made, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "createOrder", Arguments: map[string]any{"body": map[string]any{"item": "tea"}}})
	if err != nil || made.IsError {
		t.Fatalf("createOrder %+v (%v)", made, err)
	}
	if reqs := svc.requests(); len(reqs) != 2 || reqs[0] != "GET /v2/orders/o-1 "+mcpSecret+" " || reqs[1] != `POST /v2/orders `+mcpSecret+` {"item":"tea"}` {
		t.Fatalf("the service got %q", reqs)
	}

	// Usage adds the calls up, by operation and by day; a clone keeps the credentials and serves
	// the same operations; an update keeps what it leaves out.
	usage := m.do(t, "GET", "/"+id+"/usage", nil, http.StatusOK, "")["usage"].(map[string]any)
	ops := map[string]map[string]any{}
	for _, o := range usage["operations"].([]any) {
		ops[o.(map[string]any)["operation"].(string)] = o.(map[string]any)
	}
	if usage["calls"] != float64(3) || usage["errors"] != float64(1) || ops["getOrder"]["calls"] != float64(1) ||
		ops["createOrder"]["calls"] != float64(2) || ops["createOrder"]["errors"] != float64(1) || len(usage["by_day"].([]any)) != 1 {
		t.Fatalf("usage %v", usage)
	}
	m.do(t, "GET", "/"+id+"/usage?days=0", nil, http.StatusUnprocessableEntity, "invalid_field")
	clone := m.do(t, "POST", "/"+id+"/clone", map[string]any{"name": "Orders copy"}, http.StatusOK, "")["server"].(map[string]any)
	ccs, err := connectMCP(t, b, "/mcp/"+clone["id"].(string), b.key)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := ccs.CallTool(ctx, &mcp.CallToolParams{Name: "getOrder", Arguments: map[string]any{"id": "o-2"}}); err != nil || r.IsError {
		t.Fatalf("the clone's getOrder %+v (%v)", r, err)
	}
	if reqs := svc.requests(); reqs[len(reqs)-1] != "GET /v2/orders/o-2 "+mcpSecret+" " {
		t.Fatalf("the clone called %q", reqs[len(reqs)-1])
	}
	m.do(t, "POST", "/"+id+"/clone", map[string]any{"name": "orders COPY"}, http.StatusConflict, "tool_exists")
	updated := m.do(t, "PUT", "/"+id+"/update", map[string]any{"description": "The order desk."}, http.StatusOK, "")["server"].(map[string]any)
	if updated["description"] != "The order desk." || updated["name"] != "Orders" || updated["status"] != "ready" ||
		updated["config"].(map[string]any)["auth"].(map[string]any)["set"] != true {
		t.Fatalf("updated %v", updated)
	}

	otherKey, otherProject := b.newTenant(t)
	if _, err := connectMCP(t, b, "/mcp/"+id, otherKey); err == nil {
		t.Fatal("another account's key connected to the hosted server")
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/mcp/" + id + "?project_id=" + otherProject.ID, Key: otherKey})
	expect(t, res, http.StatusNotFound, "mcp_server_not_found")

	m.do(t, "DELETE", "/"+id+"/delete", nil, http.StatusOK, "")
	m.do(t, "GET", "/"+id, nil, http.StatusNotFound, "mcp_server_not_found")
	if _, err := connectMCP(t, b, "/mcp/"+id, b.key); err == nil {
		t.Fatal("a deleted hosted server still answers")
	}
}

// The catalog's connectors are OpenAPI documents bundled with the service: listed with what
// they need and their operations, and hosted with the project's credentials (here against a
// local stand-in for GitHub's API, through baseUrl).
func TestPredefinedConnectors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := mcpAPI{b}
	catalog := m.do(t, "GET", "/connectors", nil, http.StatusOK, "")["connectors"].([]any)
	names := map[string]map[string]any{}
	for _, c := range catalog {
		names[c.(map[string]any)["name"].(string)] = c.(map[string]any)
	}
	if names["github"] == nil || names["slack"] == nil || names["github"]["auth"] != "bearer" {
		t.Fatalf("catalog %v", catalog)
	}
	github := m.do(t, "GET", "/connectors/github", nil, http.StatusOK, "")["connector"].(map[string]any)
	ops := map[string]bool{}
	for _, o := range github["operations"].([]any) {
		ops[o.(map[string]any)["name"].(string)] = o.(map[string]any)["read_only"].(bool)
	}
	if len(ops) != 4 || !ops["listIssues"] || ops["createIssue"] {
		t.Fatalf("github's operations %v", ops)
	}
	m.do(t, "GET", "/connectors/carrier-pigeon", nil, http.StatusNotFound, "connector_not_found")
	m.do(t, "POST", "/create/from-predefined", map[string]any{"name": "Mail", "connectorName": "carrier-pigeon"}, http.StatusUnprocessableEntity, "invalid_field")

	var mu sync.Mutex
	var seen []string
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.WriteString(w, `[{"number":7,"title":"Crash on save"}]`)
	}))
	t.Cleanup(gh.Close)
	srv := m.do(t, "POST", "/create/from-predefined", map[string]any{"name": "GitHub", "connectorName": "github", "baseUrl": gh.URL,
		"credentials": map[string]any{"token": mcpSecret}}, http.StatusOK, "")["server"].(map[string]any)
	cs, err := connectMCP(t, b, "/mcp/"+srv["id"].(string), b.key)
	if err != nil {
		t.Fatal(err)
	}
	issues, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "listIssues", Arguments: map[string]any{"owner": "acme", "repo": "app", "state": "open"}})
	if err != nil || issues.IsError || !strings.Contains(textOf(t, issues), "Crash on save") {
		t.Fatalf("listIssues %+v (%v)", issues, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "GET /repos/acme/app/issues?state=open Bearer "+mcpSecret {
		t.Fatalf("the stand-in got %q", seen)
	}
}

// The catalog's rest connector is any JSON API under the base URL it is created with: its
// operations are the HTTP methods, each taking a path under the base URL (slashes kept, never
// climbing out of it), a query object and a JSON body, sent with the server's credentials.
func TestRESTConnector(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := mcpAPI{b}
	rest := m.do(t, "GET", "/connectors/rest", nil, http.StatusOK, "")["connector"].(map[string]any)
	if needs, _ := rest["needs"].([]any); len(needs) != 1 || needs[0] != "baseUrl" {
		t.Fatalf("the rest connector needs %v", rest["needs"])
	}
	m.do(t, "POST", "/create/from-predefined", map[string]any{"name": "Orders", "connectorName": "rest"}, http.StatusUnprocessableEntity, "invalid_field")

	type request struct{ line, auth, body string }
	var mu sync.Mutex
	var seen []request
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, request{r.Method + " " + r.URL.RequestURI(), r.Header.Get("X-Api-Key"), string(body)})
		mu.Unlock()
		_, _ = io.WriteString(w, `{"id":42,"status":"shipped"}`)
	}))
	t.Cleanup(api.Close)
	srv := m.do(t, "POST", "/create/from-predefined", map[string]any{"name": "Orders", "connectorName": "rest", "baseUrl": api.URL + "/api/v2",
		"authType": "header", "authName": "X-Api-Key", "credentials": map[string]any{"api_key": mcpSecret}}, http.StatusOK, "")["server"].(map[string]any)
	cs, err := connectMCP(t, b, "/mcp/"+srv["id"].(string), b.key)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
	}
	if slices.Sort(names); strings.Join(names, " ") != "delete get patch post put" {
		t.Fatalf("the rest connector's tools %v", names)
	}
	for _, tt := range []struct {
		name string
		args map[string]any
		want request
	}{
		{"get", map[string]any{"path": "orders/42", "query": map[string]any{"expand": "lines", "limit": 5}}, request{"GET /api/v2/orders/42?expand=lines&limit=5", mcpSecret, ""}},
		{"post", map[string]any{"path": "/orders", "body": map[string]any{"customer": "Acme"}}, request{"POST /api/v2/orders", mcpSecret, `{"customer":"Acme"}`}},
		{"delete", map[string]any{"path": "orders/a b"}, request{"DELETE /api/v2/orders/a%20b", mcpSecret, ""}},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.name, Arguments: tt.args})
		if err != nil || res.IsError || !strings.Contains(textOf(t, res), "shipped") {
			t.Fatalf("%s %v: %+v (%v)", tt.name, tt.args, res, err)
		}
		mu.Lock()
		if len(seen) != 1 || seen[0] != tt.want {
			t.Fatalf("%s %v: the API got %q, want %q", tt.name, tt.args, seen, tt.want)
		}
		mu.Unlock()
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	for _, path := range []string{"../admin", "orders/../../admin", "./x"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get", Arguments: map[string]any{"path": path}})
		if err != nil || !res.IsError || !strings.Contains(textOf(t, res), `may not have "." or ".." segments`) {
			t.Fatalf("get %q: %+v (%v)", path, res, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Fatalf("a path climbing out of the base URL reached the API: %q", seen)
	}
}

// An agent's tool may name a hosted MCP server of its project: it has the server's operations,
// and the agent's runs call them with the server's credentials, until the server is removed.
func TestAgentToolOfHostedServer(t *testing.T) {
	t.Parallel()
	b, c, fake := agentSetup(t, nil)
	svc := startOrdersService(t)
	srv := mcpAPI{b}.do(t, "POST", "/create/from-openapi", map[string]any{"name": "Orders", "openApiSpec": ordersSpec, "baseUrl": svc.URL + "/v2",
		"authType": "header", "authName": "X-Api-Key", "credentials": map[string]any{"token": mcpSecret}}, http.StatusOK, "")["server"].(map[string]any)
	a := toolsAPI{c}
	tool := a.create(t, map[string]any{"name": "Order desk", "type": "mcp", "config": map[string]any{"mcp_server_id": srv["id"]}})
	if tool["status"] != "ready" || len(operations(tool)) != 2 || tool["config"].(map[string]any)["mcp_server_id"] != srv["id"] {
		t.Fatalf("tool %v", tool)
	}
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("order-desk__getOrder", `{"id":"o-9"}`), {Reply: "Shipped."}}})
	_, done := c.chat(t, map[string]any{"message": "Where is o-9?", "reasoning_mode": "agent"})
	if cs := cycles(t, done); len(cs) != 1 || cs[0]["observation"] != `{"id":"o-9","status":"shipped"}` || cs[0]["server_label"] != "Order desk" {
		t.Fatalf("cycles %v", cs)
	}
	if got := svc.requests(); len(got) != 1 || got[0] != "GET /v2/orders/o-9 "+mcpSecret+" " {
		t.Fatalf("the service got %q", got)
	}
	mcpAPI{b}.do(t, "DELETE", "/"+srv["id"].(string)+"/delete", nil, http.StatusOK, "")
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("order-desk__getOrder", `{"id":"o-9"}`), {Reply: "It is gone."}}})
	_, after := c.chat(t, map[string]any{"message": "Where is o-9 now?", "reasoning_mode": "agent"})
	if cs := cycles(t, after); len(cs) != 1 || cs[0]["actionSuccess"] != false || !strings.Contains(cs[0]["observation"].(string), "was removed") {
		t.Fatalf("after the server's removal %v", cs)
	}
}

// A Postman collection hosts as an MCP server too: its requests are its operations, their
// path variables, queries and JSON bodies their arguments; a collection that is not one is
// refused with its problems.
func TestPostmanCollections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := mcpAPI{b}
	svc := startOrdersService(t)
	valid := m.do(t, "POST", "/validate-postman", map[string]any{"postmanCollection": ordersCollection}, http.StatusOK, "")
	if valid["valid"] != true || len(valid["operations"].([]any)) != 2 {
		t.Fatalf("validate %v", valid)
	}
	for _, bad := range []any{"not json", map[string]any{"info": map[string]any{"schema": "swagger"}}, map[string]any{"info": map[string]any{
		"schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"}, "item": []any{}}} {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/mcp/validate-postman", Key: b.key, Body: map[string]any{"postmanCollection": bad}})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		expectField(t, res, "postmanCollection")
	}
	srv := m.do(t, "POST", "/create/from-postman", map[string]any{"name": "Orders", "postmanCollection": ordersCollection, "baseUrl": svc.URL + "/v2",
		"authType": "header", "authName": "X-Api-Key", "credentials": map[string]any{"token": mcpSecret}}, http.StatusOK, "")["server"].(map[string]any)
	cs, err := connectMCP(t, b, "/mcp/"+srv["id"].(string), b.key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Get_order", Arguments: map[string]any{"id": "o-3"}}); err != nil || r.IsError {
		t.Fatalf("Get_order %+v (%v)", r, err)
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Create_order", Arguments: map[string]any{"notify": "yes",
		"body": map[string]any{"item": "tea", "quantity": 3}}}); err != nil || r.IsError {
		t.Fatalf("Create_order %+v (%v)", r, err)
	}
	if got := svc.requests(); len(got) != 2 || got[0] != "GET /v2/orders/o-3 "+mcpSecret+" " || got[1] != `POST /v2/orders `+mcpSecret+` {"item":"tea","quantity":3}` {
		t.Fatalf("the service got %q", got)
	}
}
