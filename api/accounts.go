package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

type createAccountRequest struct {
	Name string `json:"name"`
}

// createAccount (admin) creates an account and its first API key, shown once.
func (s *server) createAccount(c *gin.Context) {
	var req createAccountRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	a, secret, err := s.tenancy.CreateAccount(c, req.Name)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"account": a, "api_key": secret})
}
