package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/evals"
)

type createBotRequest struct {
	scope
	agents.Create
}

func (s *server) createBot(c *gin.Context) (any, error) {
	var req createBotRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	if err := s.project(c, &req.scope); err != nil {
		return nil, err
	}
	b, err := s.agents.Create(c, req.ProjectID, changedBy(c), req.Create)
	return gin.H{"bot": b.Public()}, err
}

func (s *server) readBot(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	return gin.H{"bot": b.Public()}, err
}

func (s *server) listBots(c *gin.Context) (any, error) {
	var sc scope
	page, err := s.projectPage(c, &sc)
	if err != nil {
		return nil, err
	}
	bots, total, err := s.agents.List(c, sc.ProjectID, page)
	for i := range bots {
		bots[i] = bots[i].Public()
	}
	return gin.H{"total": total, "bots": bots, "pagination": page.Of(total)}, err
}

type updateBotRequest struct {
	scope
	agents.Patch
}

func (s *server) updateBot(c *gin.Context) (any, error) {
	var req updateBotRequest
	id, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	if g := req.PublishGate; g != nil {
		if err := s.evals.CheckGate(c, req.ProjectID, id, g.DatasetID, g.Thresholds); err != nil {
			return nil, err
		}
	}
	if o := req.OnlineEval; o != nil {
		if err := evals.CheckOnline(o.Rate, o.Criteria); err != nil {
			return nil, err
		}
	}
	b, err := s.agents.Update(c, req.ProjectID, id, changedBy(c), req.Patch)
	return gin.H{"bot": b.Public()}, err
}

func (s *server) deleteBot(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.agents.Delete(c, sc.ProjectID, b.ID)
}

// resetBot deletes all of the agent's memory sources and keeps the agent (its new version has
// no source).
func (s *server) resetBot(c *gin.Context) (any, error) {
	var sc scope
	if err := s.decoder.Decode(c, &sc); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	if _, err := s.sources.Reset(c.Request.Context(), sc.ProjectID, b.ID, changedBy(c)); err != nil {
		return nil, err
	}
	b, err = s.agents.Get(c, sc.ProjectID, b.ID)
	return gin.H{"bot": b.Public()}, err
}

// verifyBotDomain looks up the agent's domain verification record and answers the agent with
// its domain_verification as found.
func (s *server) verifyBotDomain(c *gin.Context) (any, error) {
	var sc scope
	if err := s.decoder.Decode(c, &sc); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	b, err = s.agents.VerifyDomain(c, sc.ProjectID, b.ID)
	return gin.H{"bot": b.Public()}, err
}
