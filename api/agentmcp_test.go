package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// bearer adds an API key to every request.
type bearer string

func (k bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(k))
	return http.DefaultTransport.RoundTrip(r)
}

// connectMCP connects the official MCP client to the API's MCP server at path with key; every
// answer it gets is held to the OpenAPI document.
func connectMCP(t *testing.T, b *bundle, path, key string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "an-ide", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: b.client.URL + path,
		HTTPClient: b.client.HTTP(bearer(key)), MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// Every agent is an MCP server for its account's keys: the official Go MCP client lists its
// tools, searches its memory and chats with it, going on with a chat by its id, and the chat is
// the agent's like any other; another account's key, or none, reaches nothing.
func TestAgentAsMCPServer(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	a.ingest(t, map[string]any{"type": "text", "title": "Opening hours", "source": "The shop opens at nine and closes at six, Monday to Saturday."})
	ctx := context.Background()
	cs, err := connectMCP(t, b, "/mcp/agents/"+a.botID, b.key)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*mcp.Tool{}
	for _, tool := range listed.Tools {
		names[tool.Name] = tool
	}
	if len(names) != 2 || names["chat"] == nil || names["search_memory"] == nil || !names["search_memory"].Annotations.ReadOnlyHint {
		t.Fatalf("tools %v", listed.Tools)
	}

	found, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": "when does the shop open"}})
	if err != nil || found.IsError {
		t.Fatalf("search: %+v, %v", found, err)
	}
	if text := found.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "opens at nine") || !strings.Contains(text, "Opening hours") {
		t.Fatalf("search found %q", text)
	}

	fake.Set(providertest.Behavior{Reply: "We open at nine."})
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "When do you open?"}})
	if err != nil || first.IsError || first.Content[0].(*mcp.TextContent).Text != "We open at nine." {
		t.Fatalf("chat: %+v, %v", first, err)
	}
	var out struct {
		ChatID   string `json:"chat_id"`
		Complete bool   `json:"complete"`
	}
	raw, _ := json.Marshal(first.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil || out.ChatID == "" || !out.Complete {
		t.Fatalf("structured %s (%v)", raw, err)
	}
	fake.Set(providertest.Behavior{Reply: "Until six."})
	second, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "And until when?", "chat_id": out.ChatID}})
	if err != nil || second.IsError || second.Content[0].(*mcp.TextContent).Text != "Until six." {
		t.Fatalf("second chat turn: %+v, %v", second, err)
	}
	history := a.history(t, out.ChatID, "")
	if raw, _ := json.Marshal(history); !strings.Contains(string(raw), "And until when?") || !strings.Contains(string(raw), "Until six.") {
		t.Fatalf("the chat's history %s", raw)
	}
	// A turn the agent answers with a run waits for it; a run that needs approval says so.
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added."}}})
	paused, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "Add a deal for Acme to the CRM"}})
	var waiting struct {
		WaitingFor  string `json:"waiting_for"`
		ExecutionID string `json:"execution_id"`
		Complete    bool   `json:"complete"`
	}
	raw, _ = json.Marshal(paused.StructuredContent)
	if err != nil || json.Unmarshal(raw, &waiting) != nil || waiting.WaitingFor != "create_deal" || waiting.Complete || waiting.ExecutionID == "" ||
		!strings.Contains(paused.Content[0].(*mcp.TextContent).Text, "waits for approval to run create_deal") {
		t.Fatalf("a run that needs approval: %s (%v)", raw, err)
	}
	bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "Hi", "chat_id": "no-such-chat"}})
	if err != nil || !bad.IsError || !strings.Contains(bad.Content[0].(*mcp.TextContent).Text, "chat_not_found") {
		t.Fatalf("a chat that does not exist: %+v, %v", bad, err)
	}

	otherKey, _ := b.newTenant(t)
	if _, err := connectMCP(t, b, "/mcp/agents/"+a.botID, otherKey); err == nil {
		t.Fatal("another account's key connected to the agent")
	}
	init := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "curl", "version": "1"}}}
	for _, tt := range []struct {
		name, key, bot string
		status         int
		code           string
	}{
		{"AnotherAccount", otherKey, a.botID, http.StatusNotFound, "bot_not_found"},
		{"NoSuchAgent", b.key, "no-such-bot", http.StatusNotFound, "bot_not_found"},
		{"NoKey", "", a.botID, http.StatusUnauthorized, "missing_api_key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/mcp/agents/" + tt.bot, Key: tt.key, Body: init})
			expect(t, res, tt.status, tt.code)
		})
	}
}

// A chat through the agent's MCP server is a message like any other: it counts against the
// agent's rate limit for the caller's key, shared with /v1/bot/chat, and a refused one tells the
// caller's model the agent's ratelimit_message.
func TestAgentMCPChatRateLimit(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"ratelimit_requests": 2, "ratelimit_seconds": 3600, "ratelimit_message": "One moment, please."})
	fake.Set(providertest.Behavior{Reply: "Hello."})
	cs, err := connectMCP(t, b, "/mcp/agents/"+a.botID, b.key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "Hi"}})
		if err != nil || res.IsError {
			t.Fatalf("chat %d within the limit: %+v, %v", i+1, res, err)
		}
	}
	refused, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"message": "Hi again"}})
	if err != nil || !refused.IsError || refused.Content[0].(*mcp.TextContent).Text != "bot_rate_limited: One moment, please." {
		t.Fatalf("the third chat: %+v, %v", refused, err)
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/chat", Key: b.key,
		Body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "message": "And here?"}}), http.StatusTooManyRequests, "bot_rate_limited")
	if found, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": "anything"}}); err != nil || found.IsError {
		t.Fatalf("searching memory is not a message: %+v, %v", found, err)
	}
}
