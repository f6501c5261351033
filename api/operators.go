package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/operators"
	"github.com/agentplane/agentplane/shared/tenancy"
)

// operatorRequest is the body of an operator's creation or update.
type operatorRequest struct {
	ProjectID   string `json:"project_id"`
	OperatorID  string `json:"operator_id"`
	RotateToken bool   `json:"rotate_token"`
	operators.Input
}

// createOperator creates an operator of the account, of the request's project unless
// project_ids names its projects; its token is answered once.
func (s *server) createOperator(c *gin.Context) (any, error) {
	var req operatorRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	sc := scope{ProjectID: req.ProjectID}
	if sc.fromQuery(c); sc.ProjectID != "" || req.ProjectIDs == nil {
		if err := s.project(c, &sc); err != nil {
			return nil, err
		}
	}
	if req.ProjectIDs == nil {
		req.ProjectIDs = []string{sc.ProjectID}
	}
	o, token, err := s.operators.Create(c, httpx.Principal(c).AccountID, req.Input)
	return gin.H{"operator": o, "token": token}, err
}

func (s *server) readOperator(c *gin.Context) (any, error) {
	o, err := s.operators.Get(c, httpx.Principal(c).AccountID, c.Query("operator_id"))
	return gin.H{"operator": o}, err
}

// listOperators is one page of the account's operators: those of project_id when it is named.
func (s *server) listOperators(c *gin.Context) (any, error) {
	sc := scope{}
	if sc.fromQuery(c); sc.ProjectID != "" {
		if err := s.project(c, &sc); err != nil {
			return nil, err
		}
	}
	page, err := pageQuery(c)
	if err != nil {
		return nil, err
	}
	list, total, err := s.operators.List(c, httpx.Principal(c).AccountID, sc.ProjectID, page)
	return gin.H{"total": total, "operators": list, "pagination": page.Of(total)}, err
}

// updateOperator changes an operator; with rotate_token it answers the operator's new token,
// once, and the old one stops working.
func (s *server) updateOperator(c *gin.Context) (any, error) {
	var req operatorRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	id, err := idOf(c, req.OperatorID, "operator_id")
	if err != nil {
		return nil, err
	}
	o, token, err := s.operators.Update(c, httpx.Principal(c).AccountID, id, req.Input, req.RotateToken)
	if token != "" {
		return gin.H{"operator": o, "token": token}, err
	}
	return gin.H{"operator": o}, err
}

func (s *server) deleteOperator(c *gin.Context) (any, error) {
	return gin.H{}, s.operators.Delete(c, httpx.Principal(c).AccountID, c.Query("operator_id"))
}

// operatorMe is the record of the operator whose token the request presents.
func (s *server) operatorMe(c *gin.Context) (any, error) {
	p := httpx.Principal(c)
	if p.OperatorID == "" {
		return nil, apperr.New(apperr.Forbidden, "operator_token_required",
			"This call takes an operator's token (Authorization: Bearer op_...), not an API key.")
	}
	o, err := s.operators.Get(c, p.AccountID, p.OperatorID)
	return gin.H{"operator": o}, err
}

// inboxAuth authenticates the inbox's routes: an operator's token (operators.TokenPrefix) as
// its operator, limited to the operator's projects; any other token as an API key
// (authenticate). Every other route takes API keys only, and refuses operators' tokens.
func (s *server) inboxAuth(c *gin.Context) {
	token, err := bearer(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	if !operators.IsToken(token) {
		s.authenticate(c)
		return
	}
	o, err := s.operators.Authenticate(c, token)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	// Never nil: nil would be every project of the account.
	projects := append([]string{}, o.ProjectIDs...)
	c.Set(httpx.PrincipalKey, tenancy.Principal{AccountID: o.AccountID, OperatorID: o.ID, Projects: projects})
	c.Next()
}
