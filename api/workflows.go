package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/workflows"
)

type workflowRequest struct {
	scope
	WorkflowID string `json:"workflow_id"`
	workflows.Input
}

func (s *server) createWorkflow(c *gin.Context) (any, error) {
	var req workflowRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	w, err := s.workflows.Create(c, req.ProjectID, botID, req.Input)
	return gin.H{"workflow": w}, err
}

func (s *server) updateWorkflow(c *gin.Context) (any, error) {
	var req workflowRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	id, err := idOf(c, req.WorkflowID, "workflow_id")
	if err != nil {
		return nil, err
	}
	w, err := s.workflows.Update(c, req.ProjectID, botID, id, req.Input)
	return gin.H{"workflow": w}, err
}

func (s *server) readWorkflow(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	w, err := s.workflows.Get(c, sc.ProjectID, b.ID, c.Query("workflow_id"))
	return gin.H{"workflow": w}, err
}

func (s *server) listWorkflows(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.workflows.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "workflows": list, "pagination": page.Of(total)}, err
}

func (s *server) deleteWorkflow(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.workflows.Delete(c, sc.ProjectID, b.ID, c.Query("workflow_id"))
}
