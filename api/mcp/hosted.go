package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

// hostedAt is the hosted server an MCP request reaches, authorised for the caller's account.
type hostedAt struct{ projectID, id string }

type hostedAtKey struct{}

// newHostedMCP is the MCP handler of hosted servers (Streamable HTTP, stateless).
func (d *Door) newHostedMCP() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		h, ok := r.Context().Value(hostedAtKey{}).(hostedAt)
		if !ok {
			return nil
		}
		return d.hostedServer(r.Context(), h)
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// Hosted authorises the hosted server the path names (its project must be one of the key's
// account; another account's is not found) and serves the MCP request for it.
func (d *Door) Hosted(c *gin.Context) {
	id := c.Param("id")
	projectID, err := d.Tools.ServerProject(c, id)
	if err == nil {
		_, err = d.Tenancy.Project(c, httpx.Principal(c).AccountID, projectID)
	}
	if err != nil {
		if apperr.As(err).Kind == apperr.NotFound {
			err = apperr.NotFoundf("mcp_server")
		}
		httpx.Fail(c, err)
		return
	}
	ctx := context.WithValue(c.Request.Context(), hostedAtKey{}, hostedAt{projectID: projectID, id: id})
	d.hosted.ServeHTTP(c.Writer, c.Request.WithContext(ctx))
}

// hostedServer is the MCP server of a hosted server: one tool per active operation.
func (d *Door) hostedServer(ctx context.Context, h hostedAt) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "agentplane", Version: "1"}, nil)
	offers, err := d.Tools.ServerOffers(ctx, h.projectID, h.id)
	if err != nil {
		d.Log.Warn("hosted MCP server not read", "mcp_server_id", h.id, "error", err)
		return srv
	}
	for _, o := range offers {
		srv.AddTool(&sdk.Tool{Name: o.Operation, Description: o.Description, InputSchema: o.Schema,
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: o.ReadOnly}},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				args := json.RawMessage(req.Params.Arguments)
				out, err := d.Tools.InvokeServer(ctx, h.projectID, o, args)
				switch {
				case errors.Is(err, tools.ErrCall):
					return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
				case err != nil:
					return toolError(err), nil
				}
				return &sdk.CallToolResult{IsError: out.IsError, Content: []sdk.Content{&sdk.TextContent{Text: out.Text}}}, nil
			})
	}
	return srv
}
