package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// a2aBot is the agent an A2A request names, authorised for its key: an account's API key
// reaches the account's agents, an agent's A2A key its own agent only (another is not found, as
// another account's agent is).
func (s *server) a2aBot(c *gin.Context, botID string) (agents.Bot, error) {
	b, err := s.bot(c, &scope{BotID: botID})
	if p := httpx.Principal(c); err == nil && p.BotID != "" && p.BotID != b.ID {
		return agents.Bot{}, apperr.NotFoundf("bot")
	}
	return b, err
}

type a2aKeyRequest struct {
	scope
	Name string `json:"name"`
}

// createA2AKey creates an A2A key of the request's agent, which reaches that agent's A2A
// endpoint only; its secret is answered here and never again.
func (s *server) createA2AKey(c *gin.Context) (any, error) {
	var req a2aKeyRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return nil, err
	}
	k, secret, err := s.tenancy.CreateAgentKey(c, httpx.Principal(c).AccountID, b.ProjectID, b.ID, req.Name)
	return gin.H{"key": k, "api_key": secret}, err
}

func (s *server) listA2AKeys(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	keys, err := s.tenancy.AgentKeys(c, httpx.Principal(c).AccountID, b.ID)
	return gin.H{"keys": keys}, err
}

func (s *server) deleteA2AKey(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.tenancy.DeleteAgentKey(c, httpx.Principal(c).AccountID, b.ID, c.Query("key_id"))
}
