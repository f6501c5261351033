package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/apperr"
	"github.com/agentplane/agentplane/shared/workflows"
)

type workflowRequest struct {
	scope
	WorkflowID string `json:"workflow_id"`
	workflows.Input
}

func (s *server) createWorkflow(c *gin.Context) {
	var req workflowRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		fail(c, err)
		return
	}
	w, err := s.workflows.Create(c, req.ProjectID, b.ID, req.Input)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"workflow": w})
}

func (s *server) updateWorkflow(c *gin.Context) {
	var req workflowRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	if strings.TrimSpace(req.WorkflowID) == "" {
		req.WorkflowID = c.Query("workflow_id")
	}
	if strings.TrimSpace(req.WorkflowID) == "" {
		fail(c, apperr.Invalidf("workflow_id", "is required"))
		return
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		fail(c, err)
		return
	}
	w, err := s.workflows.Update(c, req.ProjectID, b.ID, req.WorkflowID, req.Input)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"workflow": w})
}

func (s *server) readWorkflow(c *gin.Context) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		fail(c, err)
		return
	}
	w, err := s.workflows.Get(c, sc.ProjectID, b.ID, c.Query("workflow_id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"workflow": w})
}

func (s *server) listWorkflows(c *gin.Context) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		fail(c, err)
		return
	}
	page, err := pageQuery(c)
	if err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.workflows.List(c, sc.ProjectID, b.ID, page)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"total": total, "workflows": list, "pagination": page.Of(total)})
}

func (s *server) deleteWorkflow(c *gin.Context) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.workflows.Delete(c, sc.ProjectID, b.ID, c.Query("workflow_id")); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{})
}
