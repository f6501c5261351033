package api

import (
	"cmp"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// changedBy is who a change is recorded as made by: the request's API key, else its account.
func changedBy(c *gin.Context) string {
	if p := httpx.Principal(c); p.KeyID != "" {
		return "key:" + p.KeyID
	}
	return "account:" + httpx.Principal(c).AccountID
}

func (s *server) listVersions(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	versions, total, err := s.agents.Versions(c, b, page)
	return gin.H{"total": total, "versions": versions, "pagination": page.Of(total)}, err
}

// versionQuery is the agent's version the query names as name; required.
func versionQuery(c *gin.Context, b agents.Bot, name string) (int, error) {
	v := strings.TrimSpace(c.Query(name))
	if v == "" {
		return 0, apperr.Invalidf(name, "is required")
	}
	n, err := b.Number(agents.VersionName(v))
	if err != nil {
		return 0, apperr.Invalidf(name, "must be a version number, draft or published")
	}
	return n, nil
}

func (s *server) readVersion(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	n, err := versionQuery(c, b, "version")
	if err != nil {
		return nil, err
	}
	v, err := s.agents.Version(c, b, n)
	if err != nil {
		return nil, err
	}
	out := gin.H{"version": v}
	ids, total, err := s.agents.SourcesOf(c, b, v, versionSourcesShown)
	if total >= 0 {
		out["sources"] = gin.H{"ids": ids, "total": total}
	}
	return out, err
}

// versionSourcesShown is how many ids of its memory sources a version read shows at most.
const versionSourcesShown = 1000

func (s *server) diffVersions(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	from, err := versionQuery(c, b, "from")
	if err != nil {
		return nil, err
	}
	to, err := versionQuery(c, b, "to")
	if err != nil {
		return nil, err
	}
	d, err := s.agents.Diff(c, b, from, to)
	return gin.H{"diff": d}, err
}

type versionRequest struct {
	scope
	Version agents.VersionName `json:"version"`
}

func (s *server) publishVersion(c *gin.Context) (any, error) {
	var req versionRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return nil, err
	}
	n, err := b.Number(cmp.Or(req.Version, "draft"))
	if err != nil {
		return nil, err
	}
	if g := b.PublishGate; g != nil {
		if err := s.evalRuns.Gate(c, req.ProjectID, b.ID, g.DatasetID, g.Thresholds, n); err != nil {
			return nil, err
		}
	}
	b, err = s.agents.Publish(c, req.ProjectID, b.ID, n)
	return gin.H{"bot": b.Public()}, err
}

func (s *server) rollbackVersion(c *gin.Context) (any, error) {
	var req versionRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(req.Version)) == "" {
		return nil, apperr.Invalidf("version", "is required")
	}
	n, err := b.Number(req.Version)
	if err != nil {
		return nil, err
	}
	b, err = s.agents.Rollback(c, req.ProjectID, b.ID, changedBy(c), n)
	return gin.H{"bot": b.Public()}, err
}

// botAt is the agent with the behaviour of its version name.
func (s *server) botAt(c *gin.Context, b agents.Bot, name agents.VersionName) (agents.Bot, error) {
	n, err := b.Number(name)
	if err != nil {
		return agents.Bot{}, err
	}
	return s.agents.At(c, b, n)
}
