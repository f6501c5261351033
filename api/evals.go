package api

import (
	"github.com/gin-gonic/gin"

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
