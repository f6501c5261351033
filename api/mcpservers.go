package api

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/tools"
)

func (s *server) listConnectors(c *gin.Context) (any, error) {
	list, err := s.tools.Connectors(c)
	return gin.H{"connectors": list}, err
}

func (s *server) readConnector(c *gin.Context) (any, error) {
	conn, err := s.tools.Connector(c, c.Param("name"))
	return gin.H{"connector": conn}, err
}

func (s *server) listMCPServers(c *gin.Context) (any, error) {
	var sc scope
	page, err := s.projectPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.tools.Servers(c, sc.ProjectID, page)
	return gin.H{"total": total, "servers": list, "pagination": page.Of(total)}, err
}

func (s *server) readMCPServer(c *gin.Context) (any, error) {
	var sc scope
	if err := s.project(c, &sc); err != nil {
		return nil, err
	}
	srv, err := s.tools.Server(c, sc.ProjectID, c.Param("id"))
	return gin.H{"server": srv}, err
}

type mcpServerRequest struct {
	scope
	tools.ServerInput
}

// createMCPServer adds a hosted server from an OpenAPI document or a predefined connector, as
// the route says.
func (s *server) createMCPServer(from string) httpx.Handler {
	return func(c *gin.Context) (any, error) {
		var req mcpServerRequest
		if err := s.decoder.Decode(c, &req); err != nil {
			return nil, err
		}
		if err := s.project(c, &req.scope); err != nil {
			return nil, err
		}
		switch from {
		case "openapi":
			req.ConnectorName, req.Collection = "", freeform.Value{}
		case "postman":
			if req.Collection.V == nil {
				return nil, apperr.Invalidf("postmanCollection", "is required: the Postman collection (v2.0 or v2.1)")
			}
			req.ConnectorName, req.Spec = "", freeform.Value{}
		case "predefined":
			if req.ConnectorName == "" {
				return nil, apperr.Invalidf("connectorName", "is required (GET /v1/mcp/connectors lists them)")
			}
			req.Spec, req.Collection = freeform.Value{}, freeform.Value{}
		}
		srv, err := s.tools.CreateServer(c.Request.Context(), req.ProjectID, req.ServerInput)
		if err != nil {
			return nil, err
		}
		return gin.H{"server": srv, "endpoint": "/mcp/" + srv.ID}, nil
	}
}

func (s *server) deleteMCPServer(c *gin.Context) (any, error) {
	var sc scope
	if err := s.project(c, &sc); err != nil {
		return nil, err
	}
	return gin.H{}, s.tools.DeleteServer(c, sc.ProjectID, c.Param("id"))
}

type validateSpecRequest struct {
	Spec freeform.Value `json:"openApiSpec"`
}

// validateOpenAPI reads a document as a hosted server would: valid with its operations, or 422
// with its problems.
func (s *server) validateOpenAPI(c *gin.Context) (any, error) {
	var req validateSpecRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	ops, err := s.tools.ValidateSpec(c.Request.Context(), req.Spec)
	return gin.H{"valid": err == nil, "operations": ops}, err
}

type validatePostmanRequest struct {
	Collection freeform.Value `json:"postmanCollection"`
}

// validatePostman reads a collection as a hosted server would: valid with its operations, or
// 422 with its problems.
func (s *server) validatePostman(c *gin.Context) (any, error) {
	var req validatePostmanRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	ops, err := s.tools.ValidatePostman(c.Request.Context(), req.Collection)
	return gin.H{"valid": err == nil, "operations": ops}, err
}

func (s *server) updateMCPServer(c *gin.Context) (any, error) {
	var req mcpServerRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	if err := s.project(c, &req.scope); err != nil {
		return nil, err
	}
	srv, err := s.tools.UpdateServer(c.Request.Context(), req.ProjectID, c.Param("id"), req.ServerInput)
	return gin.H{"server": srv}, err
}

type cloneRequest struct {
	scope
	Name string `json:"name"`
}

func (s *server) cloneMCPServer(c *gin.Context) (any, error) {
	var req cloneRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	if err := s.project(c, &req.scope); err != nil {
		return nil, err
	}
	srv, err := s.tools.CloneServer(c.Request.Context(), req.ProjectID, c.Param("id"), req.Name)
	if err != nil {
		return nil, err
	}
	return gin.H{"server": srv, "endpoint": "/mcp/" + srv.ID}, nil
}

func (s *server) mcpServerUsage(c *gin.Context) (any, error) {
	var sc scope
	if err := s.project(c, &sc); err != nil {
		return nil, err
	}
	days := 0
	if raw := c.Query("days"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			return nil, apperr.Invalidf("days", "must be an integer")
		}
		days = n
	}
	u, err := s.tools.ServerUsage(c, sc.ProjectID, c.Param("id"), days)
	return gin.H{"usage": u}, err
}
