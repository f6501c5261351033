package api

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/sources"
)

type sourceRequest struct {
	scope
	SourceID string `json:"source_id"`
	sources.Input
}

func (s *server) createSource(c *gin.Context) (any, error) {
	var req sourceRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	src, err := s.sources.Create(c, req.ProjectID, botID, changedBy(c), req.Input)
	return gin.H{"source": src}, err
}

func (s *server) readSource(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	src, err := s.sources.Get(c, sc.ProjectID, b.ID, c.Query("source_id"))
	return gin.H{"source": src}, err
}

func (s *server) listSources(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	f := sources.ListFilter{Tag: c.Query("tag"), Type: c.Query("type"), Status: c.Query("status")}
	list, total, err := s.sources.List(c, sc.ProjectID, b.ID, f, page)
	return gin.H{"total": total, "sources": list, "pagination": page.Of(total)}, err
}

func (s *server) updateSource(c *gin.Context) (any, error) {
	var req sourceRequest
	botID, err := s.bindID(c, &req, &req.scope, &req.SourceID, "source_id")
	if err != nil {
		return nil, err
	}
	src, err := s.sources.Update(c, req.ProjectID, botID, req.SourceID, req.Input)
	return gin.H{"source": src}, err
}

func (s *server) syncSource(c *gin.Context) (any, error) {
	var req sourceRequest
	botID, err := s.bindID(c, &req, &req.scope, &req.SourceID, "source_id")
	if err != nil {
		return nil, err
	}
	src, err := s.sources.Sync(c, req.ProjectID, botID, req.SourceID)
	return gin.H{"source": src}, err
}

func (s *server) deleteSource(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.sources.Delete(c, sc.ProjectID, b.ID, changedBy(c), c.Query("source_id"))
}

// searchRequest asks an agent's memory directly.
type searchRequest struct {
	scope
	Keywords  string      `json:"keywords"`
	SourceIDs []string    `json:"source_ids"`
	Tags      []string    `json:"tags"`
	Top       flex.OptInt `json:"top"`
	Explain   bool        `json:"explain"`
}

func (s *server) searchMemory(c *gin.Context) (any, error) {
	var req searchRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Keywords) == "" {
		return nil, apperr.Invalidf("keywords", "is required")
	}
	results, err := s.memory.Search(c, memory.Query{ProjectID: req.ProjectID, BotID: botID, Text: req.Keywords,
		Filter: memory.Filter{SourceIDs: req.SourceIDs, Tags: req.Tags}, Top: int(req.Top.Value), Explain: req.Explain})
	return gin.H{"results": results}, err
}
