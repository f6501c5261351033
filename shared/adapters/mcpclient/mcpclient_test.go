package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/shared/adapters/mcpclient"
	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

type lookupIn struct {
	Customer string `json:"customer" jsonschema:"the customer's name"`
}

type refundIn struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

// mcpServer is a real MCP server of the official Go SDK with a read-only tool, a mutating one, a
// tool that answers more than the client shows, and one that answers only when the test ends; it counts the
// requests that carried the expected Authorization header.
type mcpServer struct {
	streamable, sse string
	authorized      atomic.Int64
	refunds         atomic.Int64
}

func startServer(t *testing.T) *mcpServer {
	t.Helper()
	m := &mcpServer{}
	release := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "lookup_order", Description: "Find a customer's last order.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Order 42 for " + in.Customer + ": shipped."}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "refund", Description: "Refund an order."},
		func(_ context.Context, _ *mcp.CallToolRequest, in refundIn) (*mcp.CallToolResult, any, error) {
			m.refunds.Add(1)
			if in.Amount > 100 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refunds above 100 need a manager"}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded " + in.Order}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "export", Description: "Export everything."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 5000)}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			<-release
			return &mcp.CallToolResult{}, nil, nil
		})
	get := func(*http.Request) *mcp.Server { return server }
	counted := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "Bearer shop-secret" {
				m.authorized.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
	streamable := httptest.NewServer(counted(mcp.NewStreamableHTTPHandler(get, nil)))
	sse := httptest.NewServer(counted(mcp.NewSSEHandler(get, nil)))
	t.Cleanup(func() {
		close(release)
		streamable.Close()
		sse.Close()
	})
	m.streamable, m.sse = streamable.URL, sse.URL
	return m
}

func client(allowPrivate bool) *mcpclient.Client {
	return mcpclient.New(safehttp.New(safehttp.Options{AllowPrivate: allowPrivate, Timeout: time.Minute}).HTTPClient())
}

func endpoint(url, transport string, headers map[string]string, timeout time.Duration) tools.Endpoint {
	return tools.Endpoint{URL: url, Transport: transport, Headers: headers, Timeout: timeout, MaxBytes: 1000}
}

// Over both transports, the client lists the server's tools with their schemas and whether they
// change anything, calls them with the server's credentials, and reads the tool's own failures
// as results.
func TestToolsAndCalls(t *testing.T) {
	m := startServer(t)
	c := client(true)
	headers := map[string]string{"Authorization": "Bearer shop-secret"}
	for _, s := range []tools.Endpoint{
		endpoint(m.streamable, "", headers, 10*time.Second),
		endpoint(m.streamable, tools.TransportStreamable, headers, 10*time.Second),
		endpoint(m.sse, tools.TransportSSE, headers, 10*time.Second),
	} {
		t.Run(s.Transport, func(t *testing.T) {
			ctx := context.Background()
			ops, _, err := c.List(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]tools.Operation{}
			for _, op := range ops {
				byName[op.Name] = op
			}
			lookup, refund := byName["lookup_order"], byName["refund"]
			if len(ops) != 4 || !lookup.ReadOnly || refund.ReadOnly || lookup.Description != "Find a customer's last order." {
				t.Fatalf("operations %+v", ops)
			}
			if props, _ := lookup.InputSchema["properties"].(map[string]any); props["customer"] == nil {
				t.Fatalf("lookup's schema %v", lookup.InputSchema)
			}

			res, err := c.Call(ctx, s, tools.Operation{Name: "lookup_order"}, json.RawMessage(`{"customer":"Ada"}`))
			if err != nil || res.Text != "Order 42 for Ada: shipped." || res.IsError || res.Truncated {
				t.Fatalf("lookup %+v (%v)", res, err)
			}
			before := m.refunds.Load()
			res, err = c.Call(ctx, s, tools.Operation{Name: "refund"}, json.RawMessage(`{"order":"42","amount":500}`))
			if err != nil || !res.IsError || res.Text != "refunds above 100 need a manager" || m.refunds.Load() != before+1 {
				t.Fatalf("a refused refund %+v (%v)", res, err)
			}
			res, err = c.Call(ctx, s, tools.Operation{Name: "export"}, json.RawMessage(`{}`))
			if err != nil || !res.Truncated || !strings.HasPrefix(res.Text, strings.Repeat("x", 1000)+"\n[truncated: the tool answered 5000 bytes") {
				t.Fatalf("a large answer %q (%v)", res.Text[:min(len(res.Text), 80)], err)
			}
		})
	}
	if m.authorized.Load() == 0 {
		t.Fatal("no request carried the server's credentials")
	}
}

// What cannot be called is a clear error, never a hang: a private address through the guarded
// client, a server that does not answer in time, an address where no MCP server listens.
func TestFailures(t *testing.T) {
	m := startServer(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>not MCP</html>")) }))
	t.Cleanup(plain.Close)
	for _, tt := range []struct {
		name   string
		client *mcpclient.Client
		server tools.Endpoint
		call   string
		code   string
	}{
		{"PrivateAddressRefused", client(false), endpoint(m.streamable, "", nil, 10*time.Second), "", "mcp_unreachable"},
		{"NotMCP", client(true), endpoint(plain.URL, "", nil, 10*time.Second), "", "mcp_unreachable"},
		{"Hangs", client(true), endpoint(m.streamable, "", nil, 500*time.Millisecond), "hang", "mcp_timeout"},
		{"UnknownTransport", client(true), endpoint(m.streamable, "carrier-pigeon", nil, 10*time.Second), "", "invalid_field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.call != "" {
				_, err = tt.client.Call(context.Background(), tt.server, tools.Operation{Name: tt.call}, json.RawMessage(`{}`))
			} else {
				_, _, err = tt.client.List(context.Background(), tt.server)
			}
			if got := apperr.As(err).Code; got != tt.code {
				t.Fatalf("error %v (code %q), want %s", err, got, tt.code)
			}
			if strings.Contains(apperr.As(err).Message, "127.0.0.1") {
				t.Fatalf("the message shows an address: %s", apperr.As(err).Message)
			}
		})
	}
}
