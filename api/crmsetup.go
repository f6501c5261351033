package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/crm"
)

func (s *server) crmSetup(c *gin.Context) (any, error) {
	var sc scope
	bot, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	setup, err := s.crm.Setup(c, sc.ProjectID, bot.ID)
	return gin.H{"setup": setup}, err
}

func (s *server) listCRMTemplates(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	return gin.H{"total": len(crm.Templates), "templates": crm.Templates}, nil
}

type applyTemplateRequest struct {
	scope
	crm.ApplyInput
}

func (s *server) applyCRMTemplate(c *gin.Context) (any, error) {
	var req applyTemplateRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	applied, err := s.crm.ApplyTemplate(c, req.ProjectID, botID, req.ApplyInput)
	return gin.H{"applied": applied}, err
}

func (s *server) crmReport(c *gin.Context) (any, error) {
	var sc scope
	bot, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	report, err := s.crm.Report(c, sc.ProjectID, bot.ID, crm.ReportQuery{From: c.Query("from"), To: c.Query("to")})
	return gin.H{"report": report}, err
}
