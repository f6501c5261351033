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
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

// Client talks to MCP servers: it is the tools' connector of type mcp.
type Client struct{ http *http.Client }

var _ tools.Connector = (*Client)(nil)

// New returns a client whose requests go through hc.
func New(hc *http.Client) *Client { return &Client{http: hc} }

// List lists every tool of the server e as an operation.
func (c *Client) List(ctx context.Context, e tools.Endpoint) ([]tools.Operation, string, error) {
	var out []tools.Operation
	err := c.session(ctx, e, func(ctx context.Context, cs *mcp.ClientSession) error {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			var schema map[string]any
			if raw, err := json.Marshal(t.InputSchema); err == nil {
				_ = json.Unmarshal(raw, &schema)
			}
			out = append(out, tools.Operation{Name: t.Name, Description: t.Description, InputSchema: schema,
				ReadOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint})
		}
		return nil
	})
	return out, "", err
}

// Call calls the tool op of the server e with args (a JSON object).
func (c *Client) Call(ctx context.Context, e tools.Endpoint, op tools.Operation, args json.RawMessage) (tools.Output, error) {
	var out tools.Output
	err := c.session(ctx, e, func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: op.Name, Arguments: args})
		if err != nil {
			return err
		}
		out = output(r, e.MaxBytes)
		return nil
	})
	return out, err
}

// session connects to e, runs f on the session and closes it, within e's time limit.
func (c *Client) session(ctx context.Context, e tools.Endpoint, f func(context.Context, *mcp.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	endpoint, err := withQuery(e.URL, e.Query)
	origin, perr := url.Parse(e.URL)
	if err != nil || perr != nil {
		return apperr.Invalidf("config.url", "is not a URL")
	}
	hc := *c.http
	hc.Transport = headers{base: hc.Transport, set: e.Headers, origin: origin}
	var t mcp.Transport
	switch e.Transport {
	case "", tools.TransportStreamable:
		t = &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: true}
	case tools.TransportSSE:
		t = &mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: &hc}
	default:
		return apperr.Invalidf("transport", "must be %s or %s", tools.TransportStreamable, tools.TransportSSE)
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

// withQuery is raw with the parameters of q added to its query.
func withQuery(raw string, q url.Values) (string, error) {
	if len(q) == 0 {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	all := u.Query()
	for k, vs := range q {
		all[k] = vs
	}
	u.RawQuery = all.Encode()
	return u.String(), nil
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

// output turns a tool's answer into text: its text contents, else its structured content as
// JSON, cut to max bytes with a note saying so.
func output(r *mcp.CallToolResult, max int) tools.Output {
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
	return tools.OutputOf(text, r.IsError, max)
}

// headers sets a server's headers (its credentials) on every request to its origin, and on no
// other: not on a redirect elsewhere, nor on an SSE endpoint the server names on another host.
type headers struct {
	base   http.RoundTripper
	set    map[string]string
	origin *url.URL
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.set) > 0 && safehttp.SameOrigin(r.URL, h.origin) {
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
