package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// toolsAPI calls the tool routes of one agent.
type toolsAPI struct{ chatAPI }

func (a toolsAPI) do(t *testing.T, method, path string, body map[string]any, status int, code string) map[string]any {
	t.Helper()
	req := apitest.Request{Method: method, Path: "/v1/bot/tool" + path, Key: a.b.key}
	if body != nil {
		req.Body = a.body(body)
	} else {
		sep := "?"
		if strings.Contains(req.Path, "?") {
			sep = "&"
		}
		req.Path += sep + a.query("")
	}
	res := a.b.client.Do(req)
	expect(t, res, status, code)
	if strings.Contains(string(res.Body), mcpSecret) || strings.Contains(string(res.Body), "tenant-77") {
		t.Fatalf("%s %s answers a credential: %s", method, path, res.Body)
	}
	return res.JSON(t)
}

func (a toolsAPI) create(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	return a.do(t, http.MethodPost, "", body, http.StatusOK, "")["tool"].(map[string]any)
}

// operations maps a tool's operations by name.
func operations(tool map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range tool["operations"].([]any) {
		op := o.(map[string]any)
		out[op["name"].(string)] = op
	}
	return out
}

// An agent's MCP tool is read from its server when it is added, over either transport, with
// the credentials it was given, which no answer and no stored document shows; its operations
// are configured, toggled, tested, refreshed; a server that refuses is a clear error.
func TestAgentTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	peer := startMCP(t)
	a := toolsAPI{b.chatBot(t, map[string]any{"name": "Shop agent"})}

	tool := a.create(t, shopTool("Shop", peer.streamable, ""))
	ops := operations(tool)
	cfg := tool["config"].(map[string]any)
	auth := cfg["auth"].(map[string]any)
	if tool["status"] != "ready" || len(ops) != 4 || ops["lookup_order"]["read_only"] != true || ops["refund"]["read_only"] != false ||
		ops["refund"]["active"] != true || ops["refund"]["approval"] != "auto" || cfg["transport"] != "streamable" ||
		auth["type"] != "bearer" || auth["set"] != true || len(cfg["headers"].([]any)) != 1 || cfg["headers"].([]any)[0] != "X-Shop-Tenant" {
		t.Fatalf("created %v", tool)
	}
	if props, _ := ops["lookup_order"]["input_schema"].(map[string]any)["properties"].(map[string]any); props["customer"] == nil {
		t.Fatalf("lookup's schema %v", ops["lookup_order"]["input_schema"])
	}
	id := tool["id"].(string)
	if peer.authorized.Load() == 0 || peer.refused.Load() != 0 {
		t.Fatalf("the server saw %d authorized and %d refused requests", peer.authorized.Load(), peer.refused.Load())
	}
	sse := a.create(t, shopTool("Shop over SSE", peer.sse, "sse"))
	if sse["status"] != "ready" || len(operations(sse)) != 4 {
		t.Fatalf("over SSE %v", sse)
	}
	a.do(t, http.MethodPost, "", shopTool("shop", peer.streamable, ""), http.StatusConflict, "tool_exists")

	if got := a.do(t, http.MethodGet, "/"+id, nil, http.StatusOK, "")["tool"].(map[string]any); got["name"] != "Shop" || len(operations(got)) != 4 {
		t.Fatalf("read %v", got)
	}
	for _, tt := range []struct {
		filter string
		want   int
	}{{"", 2}, {"&filter[type]=mcp", 2}, {"&filter[type]=openapi", 0}, {`&filter={"type":"mcp"}`, 2}} {
		list := a.do(t, http.MethodGet, "?"+a.query(tt.filter), nil, http.StatusOK, "")
		if list["total"] != float64(tt.want) || len(list["tools"].([]any)) != tt.want {
			t.Errorf("list %q: %v", tt.filter, list)
		}
	}
	a.do(t, http.MethodGet, "?"+a.query("&filter=nope"), nil, http.StatusUnprocessableEntity, "invalid_field")

	configured := a.do(t, http.MethodPut, "/"+id+"/configure", map[string]any{"settings": map[string]any{
		"approval": "always", "operations": map[string]any{"lookup_order": "never"}, "timeout_seconds": 5,
		"allowed_operations": []any{"lookup_order", "refund", "hang"}}}, http.StatusOK, "")["tool"].(map[string]any)
	ops = operations(configured)
	if ops["lookup_order"]["approval"] != "never" || ops["refund"]["approval"] != "always" || ops["export"]["active"] != false ||
		configured["settings"].(map[string]any)["timeout_seconds"] != float64(5) {
		t.Fatalf("configured %v", configured)
	}
	a.do(t, http.MethodPut, "/"+id+"/configure", map[string]any{"settings": map[string]any{"approval": "sometimes", "timeout_seconds": 0}},
		http.StatusUnprocessableEntity, "invalid_field")

	toggled := a.do(t, http.MethodPost, "/"+id+"/toggle", map[string]any{"tool_name": "hang", "active": false}, http.StatusOK, "")["tool"].(map[string]any)
	if ops := operations(toggled); ops["hang"]["active"] != false || ops["refund"]["active"] != true {
		t.Fatalf("toggled %v", toggled)
	}
	a.do(t, http.MethodPost, "/"+id+"/toggle", map[string]any{"tool_name": "teleport", "active": true}, http.StatusNotFound, "operation_not_found")
	a.do(t, http.MethodPost, "/"+id+"/toggle", map[string]any{"tool_name": "hang"}, http.StatusUnprocessableEntity, "invalid_field")

	test := a.do(t, http.MethodPost, "/"+id+"/test", map[string]any{}, http.StatusOK, "")
	if test["ok"] != true || len(test["operations"].([]any)) != 4 {
		t.Fatalf("test %v", test)
	}

	// Renamed without its credentials, the tool keeps them: the server still lets it in.
	renamed := a.do(t, http.MethodPut, "/"+id, map[string]any{"name": "Shop Two"}, http.StatusOK, "")["tool"].(map[string]any)
	if renamed["name"] != "Shop Two" || renamed["status"] != "ready" || renamed["config"].(map[string]any)["auth"].(map[string]any)["set"] != true {
		t.Fatalf("renamed %v", renamed)
	}
	// With a wrong token the server refuses: the tool says why, keeps what it read, and a test
	// answers the failure.
	refusedBefore := peer.refused.Load()
	wrong := a.do(t, http.MethodPut, "/"+id, map[string]any{"config": map[string]any{"auth": map[string]any{"type": "bearer", "token": "sk-wrong"}}},
		http.StatusOK, "")["tool"].(map[string]any)
	if wrong["status"] != "error" || wrong["last_error"] == "" || len(operations(wrong)) != 4 || peer.refused.Load() == refusedBefore {
		t.Fatalf("with a wrong token %v", wrong)
	}
	failed := a.do(t, http.MethodPost, "/"+id+"/test", map[string]any{}, http.StatusOK, "")
	if e, _ := failed["error"].(map[string]any); failed["ok"] != false || e["code"] != "mcp_unreachable" || e["status"] != float64(http.StatusBadGateway) {
		t.Fatalf("test with a wrong token %v", failed)
	}
	a.do(t, http.MethodPost, "/"+id+"/refresh", map[string]any{}, http.StatusBadGateway, "mcp_unreachable")
	fixed := a.do(t, http.MethodPut, "/"+id, map[string]any{"config": map[string]any{"auth": map[string]any{"type": "bearer", "token": mcpSecret}}},
		http.StatusOK, "")["tool"].(map[string]any)
	if fixed["status"] != "ready" || fixed["last_error"] != "" {
		t.Fatalf("fixed %v", fixed)
	}
	if refreshed := a.do(t, http.MethodPost, "/"+id+"/refresh", map[string]any{}, http.StatusOK, "")["tool"].(map[string]any); refreshed["status"] != "ready" {
		t.Fatalf("refreshed %v", refreshed)
	}

	// The credentials are sealed in the store.
	var docs []bson.M
	cur, err := b.db.Collection("tools").Find(context.Background(), bson.M{"project_id": b.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(context.Background(), &docs); err != nil || len(docs) != 2 {
		t.Fatalf("%d tool documents (%v)", len(docs), err)
	}
	raw, _ := json.Marshal(docs)
	if bytes.Contains(raw, []byte(mcpSecret)) || bytes.Contains(raw, []byte("tenant-77")) || bytes.Contains(raw, []byte("sk-wrong")) {
		t.Fatalf("a credential is stored in the clear: %s", raw)
	}

	a.do(t, http.MethodDelete, "/"+id, nil, http.StatusOK, "")
	a.do(t, http.MethodGet, "/"+id, nil, http.StatusNotFound, "tool_not_found")
	a.do(t, http.MethodPost, "/"+id+"/refresh", map[string]any{}, http.StatusNotFound, "tool_not_found")
}

// An operation left out of allowed_operations or toggled off is not offered to the model, and
// the model asking for it anyway reaches no server; one toggled off while a run is under way,
// after the run was offered it, is refused when the run calls it.
func TestDisabledOperationsAreNeitherOfferedNorCalled(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, nil)
	peer := startMCP(t)
	a := toolsAPI{c}
	id := a.create(t, shopTool("Shop", peer.streamable, ""))["id"].(string)
	a.do(t, http.MethodPut, "/"+id+"/configure", map[string]any{"settings": map[string]any{
		"timeout_seconds": 60, "allowed_operations": []any{"lookup_order", "refund", "hang"}}}, http.StatusOK, "")
	a.do(t, http.MethodPost, "/"+id+"/toggle", map[string]any{"tool_name": "refund", "active": false}, http.StatusOK, "")

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("shop__export", `{}`),
		call("shop__refund", `{"order":"42","amount":5}`),
		call("shop__hang", `{}`),
		call("shop__lookup_order", `{"customer":"Ada"}`),
		{Reply: "Nothing I may do."},
	}})
	answered := make(chan *apitest.Response, 1)
	go func() {
		res, err := c.b.client.Try(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/chat", Key: c.b.key,
			Body: c.body(map[string]any{"message": "Export the orders and refund Ada", "reasoning_mode": "agent"})})
		if err != nil {
			t.Error(err)
		}
		answered <- res
	}()
	// The run was offered lookup_order and now waits in hang: lookup_order is toggled off before
	// the run calls it.
	select {
	case <-peer.hanging:
	case res := <-answered:
		if res != nil {
			t.Fatalf("the run ended without calling hang: %d %s", res.Status, res.Body)
		}
		t.FailNow()
	case <-time.After(time.Minute):
		t.Fatal("the run never called hang")
	}
	a.do(t, http.MethodPost, "/"+id+"/toggle", map[string]any{"tool_name": "lookup_order", "active": false}, http.StatusOK, "")
	peer.unhang <- struct{}{}
	res := <-answered
	if res == nil {
		t.FailNow()
	}
	expect(t, res, http.StatusOK, "")
	if chat := res.JSON(t)["chat"].(map[string]any); chat["isComplete"] != true || chat["reply"] != "Nothing I may do." {
		t.Fatalf("the run answered %v", chat)
	}

	reqs := fake.Requests()
	offered := reqs[0].Tools
	if !slices.Contains(offered, "shop__lookup_order") || !slices.Contains(offered, "shop__hang") ||
		slices.Contains(offered, "shop__export") || slices.Contains(offered, "shop__refund") {
		t.Fatalf("the model was offered %v", offered)
	}
	var seen []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			seen = append(seen, m.Content)
		}
	}
	if len(seen) != 4 || !strings.Contains(seen[0], `There is no tool "shop__export"`) || !strings.Contains(seen[1], `There is no tool "shop__refund"`) ||
		seen[2] != "The warehouse answered." || !strings.Contains(seen[3], "no longer offered") {
		t.Fatalf("the model saw %q", seen)
	}
	if n := len(peer.refundsMade()); n != 0 {
		t.Fatalf("%d refunds made", n)
	}
}

// Bad tools are refused with the field at fault, and nothing is stored.
func TestAgentToolValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := toolsAPI{b.chatBot(t, map[string]any{"name": "Strict agent"})}
	withConfig := func(cfg map[string]any) map[string]any {
		return map[string]any{"name": "Shop", "type": "mcp", "config": cfg}
	}
	for _, tt := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"NoName", map[string]any{"type": "mcp", "config": map[string]any{"url": "https://mcp.example.com"}}, "name"},
		{"NameWithoutLetters", map[string]any{"name": "___", "type": "mcp", "config": map[string]any{"url": "https://mcp.example.com"}}, "name"},
		{"NoType", map[string]any{"name": "Shop", "config": map[string]any{"url": "https://mcp.example.com"}}, "type"},
		{"HTTPMethod", map[string]any{"name": "Shop", "type": "http", "config": map[string]any{"url": "https://api.example.com/hook", "method": "TRACE"}}, "config.method"},
		{"HTTPNoURL", map[string]any{"name": "Shop", "type": "http", "config": map[string]any{"method": "POST"}}, "config.url"},
		{"OpenAPIWithoutSpec", map[string]any{"name": "Shop", "type": "openapi", "config": map[string]any{"url": "https://api.example.com"}}, "config.spec"},
		{"OpenAPISpecAndURL", map[string]any{"name": "Shop", "type": "openapi", "config": map[string]any{"spec": ordersSpec, "spec_url": "https://api.example.com/openapi.json"}}, "config.spec"},
		{"OpenAPISpecURL", map[string]any{"name": "Shop", "type": "openapi", "config": map[string]any{"spec_url": "file:///etc/passwd"}}, "config.spec_url"},
		{"OpenAPISpecNotOne", map[string]any{"name": "Shop", "type": "openapi", "config": map[string]any{"spec": "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a/{id}:\n    get:\n      responses: {'200': {description: ok}}\n"}}, "config.spec"},
		{"OpenAPISpecNumber", map[string]any{"name": "Shop", "type": "openapi", "config": map[string]any{"spec": 42}}, "config.spec"},
		{"UnknownType", map[string]any{"name": "Shop", "type": "carrier-pigeon", "config": map[string]any{"url": "https://mcp.example.com"}}, "type"},
		{"NoURL", withConfig(map[string]any{}), "config.url"},
		{"NotHTTP", withConfig(map[string]any{"url": "ftp://mcp.example.com"}), "config.url"},
		{"CredentialsInURL", withConfig(map[string]any{"url": "https://user:pw@mcp.example.com"}), "config.url"},
		{"Transport", withConfig(map[string]any{"url": "https://mcp.example.com", "transport": "websocket"}), "config.transport"},
		{"BearerWithoutToken", withConfig(map[string]any{"url": "https://mcp.example.com", "auth": map[string]any{"type": "bearer"}}), "config.auth.token"},
		{"HeaderWithoutName", withConfig(map[string]any{"url": "https://mcp.example.com", "auth": map[string]any{"type": "header", "token": "k"}}), "config.auth.name"},
		{"BasicWithoutUser", withConfig(map[string]any{"url": "https://mcp.example.com", "auth": map[string]any{"type": "basic", "password": "p"}}), "config.auth.username"},
		{"AuthType", withConfig(map[string]any{"url": "https://mcp.example.com", "auth": map[string]any{"type": "kerberos"}}), "config.auth.type"},
		{"HeaderName", withConfig(map[string]any{"url": "https://mcp.example.com", "headers": map[string]any{"Bad Header": "x"}}), "config.headers"},
		{"NoSuchHostedServer", withConfig(map[string]any{"mcp_server_id": "no-such-server"}), "config.mcp_server_id"},
		{"HostedServerOfOpenAPITool", map[string]any{"name": "Shop", "type": "openapi", "config": map[string]any{"spec": ordersSpec, "mcp_server_id": "srv_1"}}, "config.mcp_server_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/tool", Key: b.key, Body: a.body(tt.body)})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		})
	}
	if list := a.do(t, http.MethodGet, "?"+a.query(""), nil, http.StatusOK, ""); list["total"] != float64(0) {
		t.Fatalf("refused tools were stored: %v", list)
	}
}

// Where the deployment refuses private addresses, a tool at one is never reached: the tool says
// its server could not be reached, and no request arrived there.
func TestAgentToolPrivateAddressRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, withPrivateRefused())
	peer := startMCP(t)
	a := toolsAPI{b.chatBot(t, map[string]any{"name": "Guarded agent"})}
	tool := a.create(t, shopTool("Shop", peer.streamable, ""))
	if tool["status"] != "error" || len(operations(tool)) != 0 {
		t.Fatalf("a tool at a loopback address: %v", tool)
	}
	test := a.do(t, http.MethodPost, "/"+tool["id"].(string)+"/test", map[string]any{}, http.StatusOK, "")
	if e, _ := test["error"].(map[string]any); test["ok"] != false || e["code"] != "mcp_unreachable" {
		t.Fatalf("test %v", test)
	}
	if n := peer.authorized.Load() + peer.refused.Load(); n != 0 {
		t.Fatalf("%d requests reached the private address", n)
	}
}

// syncBuffer is a log sink the server and its workers write to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An agent run calls its agent's MCP tools as the model asks: a read-only operation at once, an
// answer too large cut with a note, a server too slow observed as such, and an operation that
// changes data only once the user approves it, named by its server label and operation; the
// credentials reach the server and never the model, a log or an answer; each call is recorded.
func TestAgentRunCallsMCPTools(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	b, c, fake := agentSetup(t, nil, withLogs(logs))
	peer := startMCP(t)
	a := toolsAPI{c}
	tool := a.create(t, shopTool("Shop", peer.streamable, ""))
	a.do(t, http.MethodPut, "/"+tool["id"].(string)+"/configure", map[string]any{"settings": map[string]any{"timeout_seconds": 5, "max_result_bytes": 1000}},
		http.StatusOK, "")

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("shop__lookup_order", `{"customer":"Ada"}`),
		call("shop__export", `{}`),
		call("shop__hang", `{}`),
		call("shop__refund", `{"order":"42","amount":5}`),
		{Reply: "Refunded order 42."},
	}})
	_, paused := c.chat(t, map[string]any{"message": "Refund Ada's last order", "reasoning_mode": "agent"})
	pending, _ := paused["tool"].(map[string]any)
	if paused["requiresApproval"] != true || pending["name"] != "refund" || pending["server_label"] != "Shop" ||
		pending["parameters"].(map[string]any)["amount"] != float64(5) || pending["description"] == "" {
		t.Fatalf("paused %v", paused)
	}
	if n := len(peer.refundsMade()); n != 0 {
		t.Fatalf("%d refunds before the approval", n)
	}
	reqs := fake.Requests()
	offered := strings.Join(reqs[0].Tools, " ")
	for _, name := range []string{"search_memory", "shop__lookup_order", "shop__refund", "shop__export", "shop__hang"} {
		if !strings.Contains(offered, name) {
			t.Fatalf("the model was offered %s, not %s", offered, name)
		}
	}
	results := func(r providertest.Received) []string {
		var out []string
		for _, m := range r.Messages {
			if m.Role == "tool" {
				out = append(out, m.Content)
			}
		}
		return out
	}
	seen := results(reqs[len(reqs)-1])
	if len(seen) != 3 || seen[0] != "Order 42 for Ada: shipped." ||
		!strings.Contains(seen[1], "[truncated: the tool answered 12000 bytes; the first 1000 are shown]") || len(seen[1]) > 1200 ||
		!strings.Contains(seen[2], "did not answer in time") {
		t.Fatalf("the model saw %q", seen)
	}

	_, done := c.executeTool(t, map[string]any{"chat_id": paused["chat_id"], "tool_calls": []any{map[string]any{"tool_name": "refund"}}})
	if done == nil || done["isComplete"] != true || done["reply"] != "Refunded order 42." {
		t.Fatalf("after the approval %v", done)
	}
	if got := peer.refundsMade(); len(got) != 1 || got[0] != (refundArgs{Order: "42", Amount: 5}) {
		t.Fatalf("refunds %v", got)
	}
	cs := cycles(t, done)
	if len(cs) != 4 {
		t.Fatalf("cycles %v", cs)
	}
	for i, want := range []struct {
		op      string
		success bool
	}{{"lookup_order", true}, {"export", true}, {"hang", false}, {"refund", true}} {
		if cs[i]["server_label"] != "Shop" || cs[i]["operation"] != want.op || cs[i]["actionSuccess"] != want.success {
			t.Errorf("cycle %d: %v", i+1, cs[i])
		}
	}
	executed := done["executedTools"].([]any)
	if len(executed) != 4 || executed[3].(map[string]any)["name"] != "refund" || executed[3].(map[string]any)["server_label"] != "Shop" {
		t.Fatalf("executedTools %v", executed)
	}

	var calls []struct {
		Operation string `bson:"operation"`
		Outcome   string `bson:"outcome"`
	}
	cur, err := b.db.Collection("tool_calls").Find(context.Background(), bson.M{"project_id": b.project.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(context.Background(), &calls); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	for _, c := range calls {
		outcomes[c.Operation] = c.Outcome
	}
	if len(calls) != 4 || outcomes["lookup_order"] != "ok" || outcomes["hang"] != "failed" || outcomes["refund"] != "ok" {
		t.Fatalf("recorded calls %v", calls)
	}

	for _, r := range fake.Requests() {
		raw, _ := json.Marshal(r.Body)
		if bytes.Contains(raw, []byte(mcpSecret)) || bytes.Contains(raw, []byte("tenant-77")) {
			t.Fatalf("the model was sent a credential: %s", raw)
		}
	}
	if strings.Contains(logs.String(), mcpSecret) || strings.Contains(logs.String(), "tenant-77") {
		t.Fatal("a credential is in the logs")
	}
	if raw, _ := json.Marshal(done); bytes.Contains(raw, []byte(mcpSecret)) {
		t.Fatalf("the reply shows a credential: %s", raw)
	}

	// Configured never to ask, the refund runs at once; configured always to ask, the lookup waits.
	a.do(t, http.MethodPut, "/"+tool["id"].(string)+"/configure", map[string]any{"settings": map[string]any{
		"operations": map[string]any{"refund": "never", "lookup_order": "always"}}}, http.StatusOK, "")
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("shop__refund", `{"order":"43","amount":7}`), call("shop__lookup_order", `{"customer":"Bo"}`), {Reply: "ok"}}})
	_, second := c.chat(t, map[string]any{"message": "Refund order 43, then look up Bo", "reasoning_mode": "agent"})
	if pending, _ := second["tool"].(map[string]any); second["requiresApproval"] != true || pending["name"] != "lookup_order" || len(peer.refundsMade()) != 2 {
		t.Fatalf("with the policies swapped %v (refunds %v)", second, peer.refundsMade())
	}
}
