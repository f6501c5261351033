package api

import (
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/stats"
)

// statsScope authorises the agent a statistics call names and reads its window (from, to,
// interval).
func (s *server) statsScope(c *gin.Context) (scope, agents.Bot, stats.Window, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return sc, b, stats.Window{}, err
	}
	w, err := stats.ParseWindow(c.Query("from"), c.Query("to"), c.Query("interval"), time.Now())
	return sc, b, w, err
}

func (s *server) statsSummary(c *gin.Context) (any, error) {
	sc, b, w, err := s.statsScope(c)
	if err != nil {
		return nil, err
	}
	r, err := s.stats.Summary(c, sc.ProjectID, b.ID, w)
	return gin.H{"summary": r}, err
}
