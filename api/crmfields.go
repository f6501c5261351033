package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"

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
	statuses, err := s.crm.ContactStatuses(c, sc.ProjectID)
	return gin.H{"total": len(statuses), "statuses": statuses}, err
}

// exportContacts streams the project's contacts as CSV; an error before the first byte is the
// usual error body, one after it cuts the connection, so that a cut export never looks whole.
func (s *server) exportContacts(c *gin.Context) {
	var sc scope
	if _, err := s.bot(c, &sc); err != nil {
		httpx.Fail(c, err)
		return
	}
	export, err := s.crm.ExportContacts(c, sc.ProjectID)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="contacts.csv"`)
	c.Status(http.StatusOK)
	if err := export.WriteTo(c, c.Writer); err != nil {
		httpx.Logger(c).Error("contacts export cut short", "error", err)
		if conn, _, err := c.Writer.Hijack(); err == nil {
			conn.Close()
		}
	}
}
