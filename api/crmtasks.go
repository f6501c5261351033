package api

import (
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

type taskRequest struct {
	scope
	crm.TaskInput
}

// assignee marks in's assignee as an operator when it is the id of an operator of the key's
// account: one who works in the project, else the field is refused. Any other assignee is free
// text.
func (s *server) assignee(c *gin.Context, projectID string, in *crm.TaskInput) error {
	if in.Assignee == nil || strings.TrimSpace(*in.Assignee) == "" {
		return nil
	}
	op, err := s.operators.Get(c, httpx.Principal(c).AccountID, strings.TrimSpace(*in.Assignee))
	switch {
	case apperr.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case !slices.Contains(op.ProjectIDs, projectID):
		return apperr.Invalidf("assignee", "names an operator who does not work in this project")
	}
	in.AssigneeOperatorID = op.ID
	return nil
}

func (s *server) createTask(c *gin.Context) (any, error) {
	var req taskRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	if err := s.assignee(c, req.ProjectID, &req.TaskInput); err != nil {
		return nil, err
	}
	task, err := s.crm.CreateTask(c, req.ProjectID, botID, req.TaskInput)
	return gin.H{"task": task}, err
}

func (s *server) updateTask(c *gin.Context) (any, error) {
	var req taskRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	if err := s.assignee(c, req.ProjectID, &req.TaskInput); err != nil {
		return nil, err
	}
	task, err := s.crm.UpdateTask(c, req.ProjectID, botID, c.Param("task_id"), req.TaskInput)
	return gin.H{"task": task}, err
}

type snoozeRequest struct {
	scope
	Until string `json:"until"`
}

func (s *server) snoozeTask(c *gin.Context) (any, error) {
	var req snoozeRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	task, err := s.crm.SnoozeTask(c, req.ProjectID, botID, c.Param("task_id"), req.Until)
	return gin.H{"task": task}, err
}

func (s *server) deleteTask(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.crm.DeleteTask(c, sc.ProjectID, b.ID, c.Param("task_id"))
}

func (s *server) listTasks(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	q := crm.TaskQuery{Status: c.Query("status"), View: c.Query("view"), Timezone: c.Query("timezone")}
	tasks, total, err := s.crm.Tasks(c, sc.ProjectID, b.ID, q, page)
	return gin.H{"total": total, "tasks": tasks, "pagination": page.Of(total)}, err
}
