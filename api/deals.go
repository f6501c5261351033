package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/crm"
)

type dealRequest struct {
	scope
	crm.DealInput
}

func (s *server) createDeal(c *gin.Context) {
	var req dealRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		fail(c, err)
		return
	}
	deal, err := s.crm.CreateDeal(c, req.ProjectID, b.ID, req.DealInput)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deal": deal})
}

func (s *server) updateDeal(c *gin.Context) {
	var req dealRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		fail(c, err)
		return
	}
	deal, err := s.crm.UpdateDeal(c, req.ProjectID, b.ID, c.Param("deal_id"), req.DealInput)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deal": deal})
}

func (s *server) readDeal(c *gin.Context) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		fail(c, err)
		return
	}
	deal, err := s.crm.Deal(c, sc.ProjectID, b.ID, c.Param("deal_id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"deal": deal})
}

func (s *server) listDeals(c *gin.Context) {
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
	deals, total, err := s.crm.Deals(c, sc.ProjectID, b.ID, c.Query("status"), c.Query("stage"), page)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"total": total, "deals": deals, "pagination": page.Of(total)})
}

func (s *server) deleteDeal(c *gin.Context) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.crm.DeleteDeal(c, sc.ProjectID, b.ID, c.Param("deal_id")); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{})
}

func (s *server) listStages(c *gin.Context) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		fail(c, err)
		return
	}
	stages, err := s.crm.Stages(c, sc.ProjectID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"stages": stages})
}

func (s *server) readContact(c *gin.Context) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		fail(c, err)
		return
	}
	contact, err := s.crm.Contact(c, sc.ProjectID, c.Param("contact_id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"contact": contact})
}

func (s *server) listContacts(c *gin.Context) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		fail(c, err)
		return
	}
	page, err := pageQuery(c)
	if err != nil {
		fail(c, err)
		return
	}
	contacts, total, err := s.crm.Contacts(c, sc.ProjectID, page)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"total": total, "contacts": contacts, "pagination": page.Of(total)})
}
