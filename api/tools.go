package api

import (
	"encoding/json"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/tools"
)

// toolChanged records the agent's tool id in a new version of the agent after a change of it
// (err, the change's error, is returned as it is when the change failed).
func (s *server) toolChanged(c *gin.Context, projectID, botID, id string, err error) error {
	if err != nil {
		return err
	}
	_, err = s.agents.ToolChanged(c.Request.Context(), projectID, botID, changedBy(c), id)
	return err
}

type toolRequest struct {
	scope
	tools.Input
}

// createTool and the other handlers that reach a tool's server hand the domain the request's
// context, not gin's: a connector's SDK may read its context from goroutines that outlive the
// handler, and gin hands its Context to the next request once the handler returns.
func (s *server) createTool(c *gin.Context) (any, error) {
	var req toolRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	t, err := s.tools.Create(c.Request.Context(), req.ProjectID, botID, req.Input)
	return gin.H{"tool": t}, s.toolChanged(c, req.ProjectID, botID, t.ID, err)
}

func (s *server) updateTool(c *gin.Context) (any, error) {
	var req toolRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	t, err := s.tools.Update(c.Request.Context(), req.ProjectID, botID, c.Param("tool_id"), req.Input)
	return gin.H{"tool": t}, s.toolChanged(c, req.ProjectID, botID, t.ID, err)
}

func (s *server) readTool(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	t, err := s.tools.Get(c, sc.ProjectID, b.ID, c.Param("tool_id"))
	return gin.H{"tool": t}, err
}

func (s *server) listTools(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	typ, err := toolFilter(c)
	if err != nil {
		return nil, err
	}
	list, total, err := s.tools.List(c, sc.ProjectID, b.ID, typ, page)
	return gin.H{"total": total, "tools": list, "pagination": page.Of(total)}, err
}

// toolFilter is the type a tool list is filtered by: filter[type]=mcp, or filter={"type":"mcp"}
// as BoostGPT's client sends it.
func toolFilter(c *gin.Context) (string, error) {
	if typ := c.Query("filter[type]"); typ != "" {
		return typ, nil
	}
	raw := strings.TrimSpace(c.Query("filter"))
	if raw == "" {
		return "", nil
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(raw), &f); err != nil {
		return "", apperr.Invalidf("filter", `must be a JSON object such as {"type":"mcp"}, or use filter[type]=mcp`)
	}
	return f.Type, nil
}

func (s *server) deleteTool(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	id := c.Param("tool_id")
	return gin.H{}, s.toolChanged(c, sc.ProjectID, b.ID, id, s.tools.Delete(c, sc.ProjectID, b.ID, id))
}

type configureToolRequest struct {
	scope
	Settings tools.SettingsInput `json:"settings"`
}

func (s *server) configureTool(c *gin.Context) (any, error) {
	var req configureToolRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	t, err := s.tools.Configure(c, req.ProjectID, botID, c.Param("tool_id"), req.Settings)
	return gin.H{"tool": t}, s.toolChanged(c, req.ProjectID, botID, t.ID, err)
}

func (s *server) refreshTool(c *gin.Context) (any, error) {
	var sc scope
	botID, err := s.bind(c, &sc, &sc)
	if err != nil {
		return nil, err
	}
	t, err := s.tools.Refresh(c.Request.Context(), sc.ProjectID, botID, c.Param("tool_id"))
	return gin.H{"tool": t}, err
}

type toggleToolRequest struct {
	scope
	ToolName string `json:"tool_name"`
	Active   *bool  `json:"active"`
}

func (s *server) toggleTool(c *gin.Context) (any, error) {
	var req toggleToolRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	t, err := s.tools.Toggle(c, req.ProjectID, botID, c.Param("tool_id"), req.ToolName, req.Active)
	return gin.H{"tool": t}, s.toolChanged(c, req.ProjectID, botID, t.ID, err)
}

func (s *server) testTool(c *gin.Context) (any, error) {
	var sc scope
	botID, err := s.bind(c, &sc, &sc)
	if err != nil {
		return nil, err
	}
	res, err := s.tools.Test(c.Request.Context(), sc.ProjectID, botID, c.Param("tool_id"))
	if err != nil {
		return nil, err
	}
	out := gin.H{"ok": res.OK, "operations": res.Operations, "duration_ms": res.DurationMS}
	if res.Error != nil {
		// The server's failure, in the shape of the API's errors, with the status it would have.
		_, body, _ := httpx.ErrorOf(c, res.Error)
		out["error"] = body.Error
	}
	return out, nil
}
