package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// elsewhere is a server of another origin that keeps the requests it gets, with the
// credentials they carry, and answers each with a small JSON object.
type elsewhere struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func startElsewhere(t *testing.T) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		e.mu.Lock()
		e.seen = append(e.seen, fmt.Sprintf("%s %s %v", r.Method, r.URL.Path, r.Header))
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"o-1","status":"elsewhere"}`)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *elsewhere) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

// redirecting is a server that sends every request on to target with a 307.
func redirecting(t *testing.T, target string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(s.Close)
	return s
}

// sawCredentials fails the test when a request e got carries a credential of the tools.
func (e *elsewhere) sawCredentials(t *testing.T) {
	t.Helper()
	for _, r := range e.requests() {
		if strings.Contains(r, mcpSecret) || strings.Contains(r, "tenant-77") {
			t.Fatalf("the other origin got a credential: %s", r)
		}
	}
}

// A tool's server that redirects to another origin (another port of the same host here) does
// not get the tool's credentials sent there: not an OpenAPI tool's header credential nor its
// sealed headers, not an http tool's query token (in a Referer), not an MCP tool's bearer token
// nor its headers. The redirect itself is followed.
func TestToolCredentialsStayWithTheirOrigin(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, nil)
	other := startElsewhere(t)
	from := redirecting(t, other.URL)
	a := toolsAPI{c}

	a.create(t, map[string]any{"name": "Orders", "type": "openapi", "config": map[string]any{"spec": ordersSpec, "url": from.URL,
		"headers": map[string]any{"X-Tenant": "tenant-77"}, "auth": map[string]any{"type": "header", "name": "X-Api-Key", "token": mcpSecret}}})
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("orders__getOrder", `{"id":"o-1"}`), {Reply: "Done."}}})
	_, done := c.chat(t, map[string]any{"message": "Check o-1", "reasoning_mode": "agent"})
	if done["reply"] != "Done." {
		t.Fatalf("reply %v", done)
	}
	if got := other.requests(); len(got) != 1 || !strings.HasPrefix(got[0], "GET /orders/o-1 ") {
		t.Fatalf("the other origin got %q", got)
	}
	other.sawCredentials(t)

	a.create(t, map[string]any{"name": "Lookup", "type": "http", "config": map[string]any{"url": from.URL + "/orders/o-2", "method": "GET",
		"auth": map[string]any{"type": "query", "name": "api_key", "token": mcpSecret}}})
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("lookup__call", `{}`), {Reply: "Done."}}})
	c.chat(t, map[string]any{"message": "Check o-2", "reasoning_mode": "agent"})
	if got := other.requests(); len(got) != 2 || !strings.HasPrefix(got[1], "GET /orders/o-2 ") {
		t.Fatalf("the other origin got %q", got)
	}
	other.sawCredentials(t)

	a.create(t, shopTool("Shop", from.URL+"/mcp", ""))
	if got := other.requests(); len(got) < 3 || !strings.HasPrefix(got[2], "POST /mcp ") {
		t.Fatalf("the MCP server's redirect was not followed: %q", got)
	}
	other.sawCredentials(t)
}

// A tool, or a hosted MCP server, whose URL moves to another host keeps no credentials it is
// not given again: the update answers 422 naming them, and nothing reaches the new host. A move
// within the origin keeps them, and credentials given again go with the move.
func TestMovedToolNeedsItsCredentialsAgain(t *testing.T) {
	t.Parallel()
	b, c, _ := agentSetup(t, nil)
	peer := startMCP(t)
	other := startElsewhere(t)
	a := toolsAPI{c}
	update := func(path string, body map[string]any, fields ...string) {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: path, Key: b.key, Body: c.body(body)})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		for _, f := range fields {
			expectField(t, res, f)
		}
	}

	shop := a.create(t, shopTool("Shop", peer.streamable, ""))["id"].(string)
	update("/v1/bot/tool/"+shop, map[string]any{"config": map[string]any{"url": other.URL + "/mcp"}}, "config.auth.token", "config.headers")
	update("/v1/bot/tool/"+shop, map[string]any{"config": map[string]any{"url": other.URL + "/mcp",
		"auth": map[string]any{"type": "bearer", "token": "sk-new"}}}, "config.headers")
	moved := a.do(t, http.MethodPut, "/"+shop, map[string]any{"config": map[string]any{"url": peer.streamable + "/mcp"}}, http.StatusOK, "")["tool"].(map[string]any)
	if moved["status"] != "ready" || moved["config"].(map[string]any)["url"] != peer.streamable+"/mcp" {
		t.Fatalf("moved within its origin %v", moved)
	}

	orders := a.create(t, map[string]any{"name": "Orders", "type": "openapi", "config": map[string]any{"spec": ordersSpec, "url": peer.streamable,
		"auth": map[string]any{"type": "header", "name": "X-Api-Key", "token": mcpSecret}}})["id"].(string)
	update("/v1/bot/tool/"+orders, map[string]any{"config": map[string]any{"url": other.URL}}, "config.auth.token")

	m := mcpAPI{b}
	hosted := m.do(t, http.MethodPost, "/create/from-openapi", map[string]any{"name": "Orders", "openApiSpec": ordersSpec, "baseUrl": peer.streamable,
		"authType": "bearer", "credentials": map[string]any{"token": mcpSecret}}, http.StatusOK, "")["server"].(map[string]any)["id"].(string)
	res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/mcp/" + hosted + "/update", Key: b.key,
		Body: map[string]any{"project_id": b.project.ID, "baseUrl": other.URL}})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	expectField(t, res, "credentials.token")

	if got := other.requests(); len(got) != 0 {
		t.Fatalf("the new host was reached: %q", got)
	}
	a.do(t, http.MethodPut, "/"+shop, map[string]any{"config": map[string]any{"url": other.URL + "/mcp",
		"auth": map[string]any{"type": "bearer", "token": "sk-new"}, "headers": map[string]any{}}}, http.StatusOK, "")
	if got := other.requests(); len(got) == 0 || !strings.Contains(got[0], "Bearer sk-new") {
		t.Fatalf("the new host got %q", got)
	}
}
