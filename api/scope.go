package api

import (
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// scope is the project and agent a request addresses. Bodies carry them; GET, DELETE and the
// calendar settings carry them in the query. A body's value wins over the query's.
type scope struct {
	ProjectID string `json:"project_id"`
	BotID     string `json:"bot_id"`
}

// fromQuery fills what the body left empty from the query string.
func (sc *scope) fromQuery(c *gin.Context) {
	if strings.TrimSpace(sc.ProjectID) == "" {
		sc.ProjectID = c.Query("project_id")
	}
	if strings.TrimSpace(sc.BotID) == "" {
		sc.BotID = c.Query("bot_id")
	}
	sc.ProjectID, sc.BotID = strings.TrimSpace(sc.ProjectID), strings.TrimSpace(sc.BotID)
}

// project authorises the request's project: it must be one of the key's account, else it is not
// found, exactly like a missing one. A request that names an agent but no project (BoostGPT's
// client does so on some calls) addresses the agent's own project; an agent of another account
// is not found, exactly like a missing one.
func (s *server) project(c *gin.Context, sc *scope) error {
	_, err := s.scoped(c, sc)
	return err
}

// scoped is project, and the agent it read when the request named an agent but no project (nil
// otherwise), so that the agent is read once.
func (s *server) scoped(c *gin.Context, sc *scope) (*agents.Bot, error) {
	sc.fromQuery(c)
	if sc.ProjectID == "" && sc.BotID != "" {
		bot, err := s.agents.Find(c, sc.BotID)
		if err != nil {
			return nil, err
		}
		if err := s.ownProject(c, bot.ProjectID); err != nil {
			if apperr.As(err).Kind == apperr.NotFound {
				return nil, apperr.NotFoundf("bot")
			}
			return nil, err
		}
		sc.ProjectID = bot.ProjectID
		return &bot, nil
	}
	if sc.ProjectID == "" {
		return nil, apperr.Invalidf("project_id", "is required")
	}
	return nil, s.ownProject(c, sc.ProjectID)
}

// ownProject authorises the project id for the request's principal: a project of another
// account, or one outside the principal's projects (an operator's), is not found, exactly like a
// missing one.
func (s *server) ownProject(c *gin.Context, id string) error {
	p := httpx.Principal(c)
	if p.Projects != nil && !slices.Contains(p.Projects, id) {
		return apperr.NotFoundf("project")
	}
	_, err := s.tenancy.Project(c, p.AccountID, id)
	return err
}

// bot authorises the project and returns the request's agent, by its id or uuid.
func (s *server) bot(c *gin.Context, sc *scope) (agents.Bot, error) {
	found, err := s.scoped(c, sc)
	if err != nil {
		return agents.Bot{}, err
	}
	if found != nil {
		return *found, nil
	}
	return s.agents.Get(c, sc.ProjectID, sc.BotID)
}

// projectPage authorises the request's project and reads the page it asks for: the start of
// every list of a project's things.
func (s *server) projectPage(c *gin.Context, sc *scope) (paging.Page, error) {
	if err := s.project(c, sc); err != nil {
		return paging.Page{}, err
	}
	return pageQuery(c)
}

// botPage authorises the request's agent and reads the page it asks for: the start of every
// list of an agent's things.
func (s *server) botPage(c *gin.Context, sc *scope) (agents.Bot, paging.Page, error) {
	b, err := s.bot(c, sc)
	if err != nil {
		return agents.Bot{}, paging.Page{}, err
	}
	page, err := pageQuery(c)
	return b, page, err
}

// idOf is the id a request names in its body, else in its query as name; it is required.
func idOf(c *gin.Context, fromBody, name string) (string, error) {
	id := strings.TrimSpace(fromBody)
	if id == "" {
		id = strings.TrimSpace(c.Query(name))
	}
	if id == "" {
		return "", apperr.Invalidf(name, "is required")
	}
	return id, nil
}
