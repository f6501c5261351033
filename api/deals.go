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
	deals, total, err := s.crm.Deals(c, sc.ProjectID, b.ID, crm.DealQuery{Status: c.Query("status"), Stage: c.Query("stage"), PipelineID: c.Query("pipeline_id")}, page)
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
	contact, err := s.crm.ContactDetail(c, sc.ProjectID, c.Param("contact_id"))
	return gin.H{"contact": contact}, err
}

type noteRequest struct {
	scope
	crm.NoteInput
}

func (s *server) addContactNote(c *gin.Context) (any, error) {
	var req noteRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	note, err := s.crm.AddNote(c, req.ProjectID, botID, c.Param("contact_id"), req.NoteInput)
	return gin.H{"note": note}, err
}

func (s *server) listContactNotes(c *gin.Context) (any, error) {
	var sc scope
	_, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	notes, total, err := s.crm.ContactNotes(c, sc.ProjectID, c.Param("contact_id"), page)
	return gin.H{"total": total, "notes": notes, "pagination": page.Of(total)}, err
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

type contactRequest struct {
	scope
	crm.ContactInput
}

func (s *server) createContact(c *gin.Context) (any, error) {
	var req contactRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	contact, err := s.crm.CreateContact(c, req.ProjectID, botID, req.ContactInput)
	return gin.H{"contact": contact}, err
}

func (s *server) updateContact(c *gin.Context) (any, error) {
	var req contactRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	contact, err := s.crm.UpdateContact(c, req.ProjectID, botID, c.Param("contact_id"), req.ContactInput)
	return gin.H{"contact": contact}, err
}

func (s *server) deleteContact(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.crm.DeleteContact(c, sc.ProjectID, b.ID, c.Param("contact_id"))
}

func (s *server) searchContacts(c *gin.Context) (any, error) {
	var sc scope
	_, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	contacts, total, err := s.crm.SearchContacts(c, sc.ProjectID, c.Query("query"), page)
	return gin.H{"total": total, "contacts": contacts, "pagination": page.Of(total)}, err
}

func (s *server) listPipelines(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	list, err := s.crm.Pipelines(c, sc.ProjectID)
	return gin.H{"total": len(list), "pipelines": list}, err
}

type pipelineRequest struct {
	scope
	crm.PipelineInput
}

func (s *server) createPipeline(c *gin.Context) (any, error) {
	var req pipelineRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	p, err := s.crm.CreatePipeline(c, req.ProjectID, botID, req.PipelineInput)
	return gin.H{"pipeline": p}, err
}

func (s *server) updatePipeline(c *gin.Context) (any, error) {
	var req pipelineRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	p, err := s.crm.RenamePipeline(c, req.ProjectID, botID, c.Param("pipeline_id"), req.PipelineInput)
	return gin.H{"pipeline": p}, err
}

func (s *server) deletePipeline(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.crm.DeletePipeline(c, sc.ProjectID, b.ID, c.Param("pipeline_id"))
}

type stageRequest struct {
	scope
	crm.StageInput
}

func (s *server) createStage(c *gin.Context) (any, error) {
	var req stageRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	st, err := s.crm.CreateStage(c, req.ProjectID, botID, req.StageInput)
	return gin.H{"stage": st}, err
}

func (s *server) updateStage(c *gin.Context) (any, error) {
	var req stageRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	st, err := s.crm.UpdateStage(c, req.ProjectID, botID, c.Param("stage_id"), req.StageInput)
	return gin.H{"stage": st}, err
}

func (s *server) deleteStage(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.crm.DeleteStage(c, sc.ProjectID, b.ID, c.Param("stage_id"), c.Query("move_deals_to_stage_id"))
}

func (s *server) pipelineBoard(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	return s.crm.Board(c, sc.ProjectID, b.ID, c.Query("pipeline_id"), page)
}
