package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/evals"
)

type datasetRequest struct {
	scope
	evals.Input
}

func (s *server) createDataset(c *gin.Context) (any, error) {
	var req datasetRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	d, err := s.evals.Create(c, req.ProjectID, botID, req.Input)
	return gin.H{"dataset": d}, err
}

// importDataset stores a dataset of a JSONL body, one case a line; the project, the agent and
// the dataset's name are in the query.
func (s *server) importDataset(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	body, err := s.decoder.Text(c)
	if err != nil {
		return nil, err
	}
	d, err := s.evals.Import(c, sc.ProjectID, b.ID, c.Query("name"), body)
	return gin.H{"dataset": d}, err
}

func (s *server) listDatasets(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.evals.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "datasets": list, "pagination": page.Of(total)}, err
}

func (s *server) readDataset(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	d, err := s.evals.Get(c, sc.ProjectID, b.ID, c.Query("dataset_id"))
	return gin.H{"dataset": d}, err
}

func (s *server) deleteDataset(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.evals.Delete(c, sc.ProjectID, b.ID, c.Query("dataset_id"))
}

type fromChatsRequest struct {
	scope
	Name    string   `json:"name"`
	ChatIDs []string `json:"chat_ids"`
}

// datasetFromChats stores a dataset of the answered messages of chats of the agent; a chat of
// another agent is not found.
func (s *server) datasetFromChats(c *gin.Context) (any, error) {
	var req fromChatsRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	d, err := s.evals.FromChats(c, req.ProjectID, botID, req.Name, req.ChatIDs)
	return gin.H{"dataset": d}, err
}

type evalRunRequest struct {
	scope
	evals.RunInput
	// Version is the agent's version asked: draft, published (the default) or a number.
	Version agents.VersionName `json:"version"`
}

// createEvalRun starts a run of a dataset of the agent against one of its versions.
func (s *server) createEvalRun(c *gin.Context) (any, error) {
	var req evalRunRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return nil, err
	}
	n, err := b.Number(req.Version)
	if err == nil {
		_, err = s.agents.Version(c, b, n)
	}
	if err != nil {
		return nil, err
	}
	r, err := s.evalRuns.Start(c, req.ProjectID, b.ID, n, req.RunInput)
	return gin.H{"run": r}, err
}

func (s *server) listEvalRuns(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.evalRuns.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "runs": list, "pagination": page.Of(total)}, err
}

// readEvalRun is a run with a page of its cases, and the cases changed against the query's
// baseline run.
func (s *server) readEvalRun(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	rep, err := s.evalRuns.Read(c, sc.ProjectID, b.ID, c.Query("run_id"), c.Query("baseline"), page)
	out := gin.H{"run": rep.Run, "results": rep.Results, "total": rep.Total, "pagination": page.Of(rep.Total)}
	if rep.Changed != nil {
		out["changed"] = rep.Changed
	}
	return out, err
}

// readOnlineEvals reports the agent's online pass rates of the last `days` days, per grader by
// day and by version.
func (s *server) readOnlineEvals(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	days, err := queryInt(c, "days", evals.DefaultOnlineDays)
	if err != nil {
		return nil, err
	}
	return s.online.Rates(c, sc.ProjectID, b.ID, days)
}
