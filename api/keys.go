package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
)

type createKeyRequest struct {
	Name string `json:"name"`
}

func (s *server) createKey(c *gin.Context) (any, error) {
	var req createKeyRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	k, secret, err := s.tenancy.CreateKey(c, httpx.Principal(c).AccountID, req.Name)
	return gin.H{"key": k, "api_key": secret}, err
}

func (s *server) listKeys(c *gin.Context) (any, error) {
	keys, err := s.tenancy.Keys(c, httpx.Principal(c).AccountID)
	return gin.H{"keys": keys}, err
}

func (s *server) revokeKey(c *gin.Context) (any, error) {
	return gin.H{}, s.tenancy.RevokeKey(c, httpx.Principal(c).AccountID, c.Param("key_id"))
}
