package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

type createKeyRequest struct {
	Name string `json:"name"`
}

func (s *server) createKey(c *gin.Context) {
	var req createKeyRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	k, secret, err := s.tenancy.CreateKey(c, principal(c).AccountID, req.Name)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"key": k, "api_key": secret})
}

func (s *server) listKeys(c *gin.Context) {
	keys, err := s.tenancy.Keys(c, principal(c).AccountID)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"keys": keys})
}

func (s *server) revokeKey(c *gin.Context) {
	if err := s.tenancy.RevokeKey(c, principal(c).AccountID, c.Param("key_id")); err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{})
}
