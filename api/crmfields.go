package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/crm"
)

func (s *server) listCRMFields(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	fields, err := s.crm.Fields(c, sc.ProjectID)
	return gin.H{"total": len(fields), "fields": fields}, err
}

type fieldRequest struct {
	scope
	crm.FieldInput
}

func (s *server) createCRMField(c *gin.Context) (any, error) {
	var req fieldRequest
	if _, err := s.bind(c, &req, &req.scope); err != nil {
		return nil, err
	}
	f, err := s.crm.CreateField(c, req.ProjectID, req.FieldInput)
	return gin.H{"field": f}, err
}

func (s *server) updateCRMField(c *gin.Context) (any, error) {
	var req fieldRequest
	if _, err := s.bind(c, &req, &req.scope); err != nil {
		return nil, err
	}
	return s.crm.UpdateField(c, req.ProjectID, c.Param("field_id"), req.FieldInput)
}

func (s *server) deleteCRMField(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	return s.crm.DeleteField(c, sc.ProjectID, c.Param("field_id"))
}

func (s *server) listContactStatuses(c *gin.Context) (any, error) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		return nil, err
	}
	statuses := crm.ContactStatuses(sc.ProjectID)
	return gin.H{"total": len(statuses), "statuses": statuses}, nil
}
