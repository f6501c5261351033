package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

type createProjectRequest struct {
	Name string `json:"name"`
}

func (s *server) createProject(c *gin.Context) {
	var req createProjectRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	p, err := s.tenancy.CreateProject(c, principal(c).AccountID, req.Name)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"project": p})
}

func (s *server) listProjects(c *gin.Context) {
	page, err := pageQuery(c)
	if err != nil {
		fail(c, err)
		return
	}
	projects, total, err := s.tenancy.Projects(c, principal(c).AccountID, page)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"total": total, "projects": projects, "pagination": page.Of(total)})
}

func (s *server) readProject(c *gin.Context) {
	p, err := s.tenancy.Project(c, principal(c).AccountID, c.Param("project_id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"project": p})
}
