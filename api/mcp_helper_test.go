package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSecret is the credential an MCP peer wants, which must reach it and nothing else.
const mcpSecret = "sk-shop-9f2c41d7"

// mcpPeer is a real MCP server of the official Go SDK, over Streamable HTTP and HTTP+SSE: a
// shop with a read-only lookup, a refund that changes data, an export that answers more than
// a model is shown, and a call that answers only when its caller gives up, the test releases it
// or the test ends. It counts what reached it.
type mcpPeer struct {
	streamable, sse string
	// authorized counts requests that carried the bearer credential, refused those without.
	authorized, refused atomic.Int64
	// hanging receives a value when a call of hang begins (when there is room); a value sent on
	// unhang ends one.
	hanging, unhang chan struct{}
	mu              sync.Mutex
	refunds         []refundArgs
}

type lookupArgs struct {
	Customer string `json:"customer" jsonschema:"the customer's name"`
}

type refundArgs struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

func startMCP(t testing.TB) *mcpPeer {
	t.Helper()
	p := &mcpPeer{hanging: make(chan struct{}, 8), unhang: make(chan struct{})}
	release := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "lookup_order", Description: "Find a customer's last order.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in lookupArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Order 42 for " + in.Customer + ": shipped."}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "refund", Description: "Refund an order."},
		func(_ context.Context, _ *mcp.CallToolRequest, in refundArgs) (*mcp.CallToolResult, any, error) {
			p.mu.Lock()
			p.refunds = append(p.refunds, in)
			p.mu.Unlock()
			if in.Amount > 100 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "refunds above 100 need a manager"}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded order " + in.Order}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "export", Description: "Export every order.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("order;", 2000)}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "hang", Description: "Waits for a warehouse that never answers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case p.hanging <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-ctx.Done():
			case <-p.unhang:
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "The warehouse answered."}}}, nil, nil
		})
	get := func(*http.Request) *mcp.Server { return server }
	guarded := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+mcpSecret {
				p.refused.Add(1)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			p.authorized.Add(1)
			h.ServeHTTP(w, r)
		})
	}
	streamable := httptest.NewServer(guarded(mcp.NewStreamableHTTPHandler(get, nil)))
	sse := httptest.NewServer(guarded(mcp.NewSSEHandler(get, nil)))
	t.Cleanup(func() {
		close(release)
		streamable.Close()
		sse.Close()
	})
	p.streamable, p.sse = streamable.URL, sse.URL
	return p
}

// refundsMade are the refunds the peer carried out.
func (p *mcpPeer) refundsMade() []refundArgs {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]refundArgs(nil), p.refunds...)
}

// shopTool is the body of a tool of the peer at url.
func shopTool(name, url, transport string) map[string]any {
	return map[string]any{"name": name, "type": "mcp", "description": "The shop's orders.",
		"config": map[string]any{"url": url, "transport": transport, "auth": map[string]any{"type": "bearer", "token": mcpSecret},
			"headers": map[string]any{"X-Shop-Tenant": "tenant-77"}}}
}
