package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/crm"
)

type dealRequest struct {
	scope
	crm.DealInput
}

func (s *server) createDeal(c *gin.Context) (any, error) {
	var req dealRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	deal, err := s.crm.CreateDeal(c, req.ProjectID, botID, req.DealInput)
	return gin.H{"deal": deal}, err
}

func (s *server) updateDeal(c *gin.Context) (any, error) {
	var req dealRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	deal, err := s.crm.UpdateDeal(c, req.ProjectID, botID, c.Param("deal_id"), req.DealInput)
	return gin.H{"deal": deal}, err
}

func (s *server) readDeal(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	deal, err := s.crm.Deal(c, sc.ProjectID, b.ID, c.Param("deal_id"))
	return gin.H{"deal": deal}, err
}

func (s *server) listDeals(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	deals, total, err := s.crm.Deals(c, sc.ProjectID, b.ID, c.Query("status"), c.Query("stage"), page)
	return gin.H{"total": total, "deals": deals, "pagination": page.Of(total)}, err
}

func (s *server) deleteDeal(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.crm.DeleteDeal(c, sc.ProjectID, b.ID, c.Param("deal_id"))
}

func (s *server) listStages(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	stages, err := s.crm.Stages(c, sc.ProjectID)
	return gin.H{"stages": stages}, err
}

func (s *server) readContact(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	contact, err := s.crm.Contact(c, sc.ProjectID, c.Param("contact_id"))
	return gin.H{"contact": contact}, err
}

func (s *server) listContacts(c *gin.Context) (any, error) {
	var sc scope
	_, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	contacts, total, err := s.crm.Contacts(c, sc.ProjectID, page)
	return gin.H{"total": total, "contacts": contacts, "pagination": page.Of(total)}, err
}
