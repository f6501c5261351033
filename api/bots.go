package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/agents"
)

type createBotRequest struct {
	scope
	agents.Create
}

func (s *server) createBot(c *gin.Context) {
	var req createBotRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	if err := s.project(c, &req.scope); err != nil {
		fail(c, err)
		return
	}
	b, err := s.agents.Create(c, req.ProjectID, req.Create)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"bot": b.Public()})
}

func (s *server) readBot(c *gin.Context) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"bot": b.Public()})
}

func (s *server) listBots(c *gin.Context) {
	var sc scope
	if err := s.project(c, &sc); err != nil {
		fail(c, err)
		return
	}
	page, err := pageQuery(c)
	if err != nil {
		fail(c, err)
		return
	}
	bots, total, err := s.agents.List(c, sc.ProjectID, page)
	if err != nil {
		fail(c, err)
		return
	}
	for i := range bots {
		bots[i] = bots[i].Public()
	}
	c.JSON(http.StatusOK, gin.H{"total": total, "bots": bots, "pagination": page.Of(total)})
}

type updateBotRequest struct {
	scope
	agents.Patch
}

func (s *server) updateBot(c *gin.Context) {
	var req updateBotRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		fail(c, err)
		return
	}
	if b, err = s.agents.Update(c, req.ProjectID, b.ID, req.Patch); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"bot": b.Public()})
}

func (s *server) deleteBot(c *gin.Context) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.agents.Delete(c, sc.ProjectID, b.ID); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{})
}
