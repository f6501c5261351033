package api

import (
	"github.com/gin-gonic/gin"
)

type createAccountRequest struct {
	Name string `json:"name"`
}

// createAccount (admin) creates an account and its first API key, shown once.
func (s *server) createAccount(c *gin.Context) (any, error) {
	var req createAccountRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	a, secret, err := s.tenancy.CreateAccount(c, req.Name)
	return gin.H{"account": a, "api_key": secret}, err
}
