// Package mcpclient connects agents to the MCP servers their tools name, with the official Go
// SDK (github.com/modelcontextprotocol/go-sdk): over Streamable HTTP or the older HTTP+SSE
// transport, through the HTTP client it is given (the SSRF-guarded one), within a time limit,
// and with a tool's answer cut to a size the model is shown.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Transports of an MCP server.
const (
	Streamable = "streamable"
	SSE        = "sse"
)

// Server is an MCP server as an agent's tool names it.
type Server struct {
	URL string
	// Transport is Streamable (the default) or SSE.
	Transport string
	// Headers go with every request to the server (its credentials, say).
	Headers map[string]string
}

// Tool is one tool a server offers.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON schema of the tool's arguments.
	InputSchema json.RawMessage
	// ReadOnly is the server's word that the tool changes nothing.
	ReadOnly bool
}

// Result is what a tool answered, as text for the model.
type Result struct {
	Text string
	// IsError is the tool's own report of a failure (the call itself went through).
	IsError bool
	// Truncated says Text was cut to the size limit.
	Truncated bool
}

// Client talks to MCP servers.
type Client struct {
	http      *http.Client
	timeout   time.Duration
	maxResult int
}

// New returns a client whose requests go through hc, each exchange (connect, then list or call)
// within timeout, with results cut to maxResult bytes.
func New(hc *http.Client, timeout time.Duration, maxResult int) *Client {
	return &Client{http: hc, timeout: timeout, maxResult: maxResult}
}

// Tools lists every tool of the server s.
func (c *Client) Tools(ctx context.Context, s Server) ([]Tool, error) {
	var out []Tool
	err := c.session(ctx, s, func(ctx context.Context, cs *mcp.ClientSession) error {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			schema, err := json.Marshal(t.InputSchema)
			if err != nil {
				return err
			}
			out = append(out, Tool{Name: t.Name, Description: t.Description, InputSchema: schema,
				ReadOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint})
		}
		return nil
	})
	return out, err
}

// Call calls the tool name of the server s with args (a JSON object).
func (c *Client) Call(ctx context.Context, s Server, name string, args json.RawMessage) (Result, error) {
	var res Result
	err := c.session(ctx, s, func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return err
		}
		res = c.result(r)
		return nil
	})
	return res, err
}

// session connects to s, runs f on the session and closes it, within the client's time limit.
func (c *Client) session(ctx context.Context, s Server, f func(context.Context, *mcp.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hc := *c.http
	hc.Transport = headers{base: hc.Transport, set: s.Headers}
	var t mcp.Transport
	switch s.Transport {
	case "", Streamable:
		t = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: true}
	case SSE:
		t = &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: &hc}
	default:
		return apperr.Invalidf("transport", "must be %s or %s", Streamable, SSE)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentplane", Version: "1"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return failure(ctx, err)
	}
	err = f(ctx, cs)
	if ctx.Err() != nil {
		// A server that did not answer in time may not answer the session's end either: the
		// SDK bounds that wait (5 s), which the caller, already late, does not sit through.
		go cs.Close()
	} else {
		_ = cs.Close()
	}
	if err != nil {
		return failure(ctx, err)
	}
	return nil
}

// failure is err as the error a user sees: the server did not answer in time, or could not be
// talked to (without the addresses or resolver details of the failure).
func failure(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return apperr.New(apperr.GatewayTimeout, "mcp_timeout", "The MCP server did not answer in time.")
	}
	var e *apperr.Error
	if errors.As(err, &e) {
		return err
	}
	return &apperr.Error{Kind: apperr.BadGateway, Code: "mcp_unreachable", Message: "The MCP server could not be reached or did not speak MCP.", Err: err}
}

// result turns a tool's answer into text: its text contents, else its structured content as
// JSON, cut to the size limit with a note saying so.
func (c *Client) result(r *mcp.CallToolResult) Result {
	var parts []string
	for _, content := range r.Content {
		switch v := content.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		default:
			parts = append(parts, fmt.Sprintf("[%T content left out]", content))
		}
	}
	text := strings.Join(parts, "\n")
	if text == "" && r.StructuredContent != nil {
		raw, _ := json.Marshal(r.StructuredContent)
		text = string(raw)
	}
	res := Result{Text: text, IsError: r.IsError}
	if len(text) > c.maxResult {
		res.Text = fmt.Sprintf("%s\n[truncated: the tool answered %d bytes; the first %d are shown]", text[:c.maxResult], len(text), c.maxResult)
		res.Truncated = true
	}
	return res
}

// headers sets a server's headers on every request.
type headers struct {
	base http.RoundTripper
	set  map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.set) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.set {
			r.Header.Set(k, v)
		}
	}
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}
