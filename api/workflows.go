package api

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/workflows"
)

// workflowChanged records the agent's workflow id in a new version of the agent after a change
// of it (err, the change's error, is returned as it is when the change failed).
func (s *server) workflowChanged(c *gin.Context, projectID, botID, id string, err error) error {
	if err != nil {
		return err
	}
	_, err = s.agents.WorkflowChanged(c.Request.Context(), projectID, botID, changedBy(c), id)
	return err
}

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
	return gin.H{"workflow": w}, s.workflowChanged(c, req.ProjectID, botID, w.UUID, err)
}

func (s *server) updateWorkflow(c *gin.Context) (any, error) {
	var req workflowRequest
	botID, err := s.bindID(c, &req, &req.scope, &req.WorkflowID, "workflow_id")
	if err != nil {
		return nil, err
	}
	w, err := s.workflows.Update(c, req.ProjectID, botID, req.WorkflowID, req.Input)
	return gin.H{"workflow": w}, s.workflowChanged(c, req.ProjectID, botID, w.UUID, err)
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
	id := strings.TrimSpace(c.Query("workflow_id"))
	return gin.H{}, s.workflowChanged(c, sc.ProjectID, b.ID, id, s.workflows.Delete(c, sc.ProjectID, b.ID, id))
}

type workflowRunRequest struct {
	scope
	WorkflowID string         `json:"workflow_id"`
	Input      map[string]any `json:"input"`
	// IdempotencyKey makes a retried request start one run.
	IdempotencyKey string `json:"idempotency_key"`
	// Version, when given, runs the workflow as that version of the agent has it (a number,
	// draft or published); without it, the workflow as it is.
	Version agents.VersionName `json:"version"`
}

// runWorkflow starts a run of an active workflow by hand, with an optional input object, as
// the workflow is or as a version of the agent has it.
func (s *server) runWorkflow(c *gin.Context) (any, error) {
	var req workflowRunRequest
	botID, err := s.bindID(c, &req, &req.scope, &req.WorkflowID, "workflow_id")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(req.Version)) == "" {
		r, err := s.workflowRuns.RunManually(c, req.ProjectID, botID, req.WorkflowID, req.Input, "api", req.IdempotencyKey)
		return gin.H{"run": r}, err
	}
	b, err := s.agents.Get(c, req.ProjectID, botID)
	if err != nil {
		return nil, err
	}
	if b, err = s.botAt(c, b, req.Version); err != nil {
		return nil, err
	}
	r, err := s.workflowRuns.RunAt(c, b.ProjectID, b.ID, b.Workflows, req.WorkflowID, req.Input, "api", req.IdempotencyKey)
	return gin.H{"run": r}, err
}

func (s *server) listWorkflowRuns(c *gin.Context) (any, error) { return s.runHistory(c, "runs", false) }

// runHistory is one page of the agent's workflow runs, under key; with skipped, the skipped
// logs among them.
func (s *server) runHistory(c *gin.Context, key string, skipped bool) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.workflowRuns.List(c, sc.ProjectID, b.ID, c.Query("workflow_id"), c.Query("status"), skipped, page)
	return gin.H{"total": total, key: list, "pagination": page.Of(total)}, err
}

func (s *server) readWorkflowRun(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	r, err := s.workflowRuns.Run(c, sc.ProjectID, b.ID, c.Query("run_id"))
	return gin.H{"run": r}, err
}

// signingSecret shows the project's webhook signing secret, made on first use.
func (s *server) signingSecret(c *gin.Context) (any, error) {
	p, err := s.tenancy.Project(c, httpx.Principal(c).AccountID, c.Param("project_id"))
	if err != nil {
		return nil, err
	}
	secret, err := s.workflowRuns.SigningSecret(c, p.ID)
	return gin.H{"signing_secret": secret, "signature_header": workflows.SignatureHeader,
		"timestamp_header": workflows.TimestampHeader, "delivery_header": workflows.DeliveryHeader}, err
}

// workflowLogs is the run history as BoostGPT's clients ask for it, with the logs of the events
// the workflows' conditions filtered out.
func (s *server) workflowLogs(c *gin.Context) (any, error) { return s.runHistory(c, "logs", true) }

// workflowCatalog lists what a workflow may be made of, from the validator's own definitions.
func (s *server) workflowCatalog(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	return gin.H{"catalog": workflows.Catalog()}, nil
}
