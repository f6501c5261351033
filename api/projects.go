package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
)

type createProjectRequest struct {
	Name string `json:"name"`
}

func (s *server) createProject(c *gin.Context) (any, error) {
	var req createProjectRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	p, err := s.tenancy.CreateProject(c, httpx.Principal(c).AccountID, req.Name)
	return gin.H{"project": p}, err
}

func (s *server) listProjects(c *gin.Context) (any, error) {
	page, err := pageQuery(c)
	if err != nil {
		return nil, err
	}
	projects, total, err := s.tenancy.Projects(c, httpx.Principal(c).AccountID, page)
	return gin.H{"total": total, "projects": projects, "pagination": page.Of(total)}, err
}

func (s *server) readProject(c *gin.Context) (any, error) {
	p, err := s.tenancy.Project(c, httpx.Principal(c).AccountID, c.Param("project_id"))
	return gin.H{"project": p}, err
}
