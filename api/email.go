package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/email"
)

type emailSettingsRequest struct {
	scope
	email.SettingsInput
}

type emailRequest struct {
	scope
	EmailID string `json:"email_id"`
	Content string `json:"content"`
}

// emailAddress answers the agent's address as BoostGPT's client reads it, with its settings.
func (s *server) emailAddress(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	st, err := s.email.Settings(c, b)
	return gin.H{"email_address": st.EmailAddress, "custom_domain": nil, "enabled": true, "settings": st}, err
}

func (s *server) updateEmailSettings(c *gin.Context) (any, error) {
	var req emailSettingsRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return nil, err
	}
	st, err := s.email.UpdateSettings(c, b, req.SettingsInput)
	return gin.H{"email_address": st.EmailAddress, "settings": st}, err
}

func (s *server) emailStats(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	st, err := s.email.Stats(c, sc.ProjectID, b.ID)
	return gin.H{"stats": st}, err
}

func (s *server) listEmails(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.email.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "emails": list, "pagination": page.Of(total)}, err
}

// emailOf reads a request naming one email of the agent: the request, its agent and the
// email's id (required).
func (s *server) emailOf(c *gin.Context) (emailRequest, agents.Bot, string, error) {
	var req emailRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return req, agents.Bot{}, "", err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return req, b, "", err
	}
	id, err := idOf(c, req.EmailID, "email_id")
	return req, b, id, err
}

func (s *server) readEmail(c *gin.Context) (any, error) {
	req, b, id, err := s.emailOf(c)
	if err != nil {
		return nil, err
	}
	e, err := s.email.Get(c, req.ProjectID, b.ID, id)
	return gin.H{"email": e}, err
}

func (s *server) replyEmail(c *gin.Context) (any, error) {
	req, b, id, err := s.emailOf(c)
	if err != nil {
		return nil, err
	}
	e, err := s.email.Reply(c, req.ProjectID, b, id, req.Content)
	return gin.H{"email": e}, err
}

func (s *server) deleteEmail(c *gin.Context) (any, error) {
	req, b, id, err := s.emailOf(c)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.email.Delete(c, req.ProjectID, b.ID, id)
}
