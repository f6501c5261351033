package api

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/stats"
)

// statsCall answers one statistics call: it authorises the agent, reads the window (from, to,
// interval) and answers read's report as name.
func statsCall[T any](s *server, c *gin.Context, name string, read func(context.Context, string, string, stats.Window) (stats.Report[T], error)) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	w, err := stats.ParseWindow(c.Query("from"), c.Query("to"), c.Query("interval"), time.Now())
	if err != nil {
		return nil, err
	}
	r, err := read(c, sc.ProjectID, b.ID, w)
	return gin.H{name: r}, err
}

func (s *server) statsSummary(c *gin.Context) (any, error) {
	return statsCall(s, c, "summary", s.stats.Summary)
}

func (s *server) statsVotes(c *gin.Context) (any, error) {
	return statsCall(s, c, "votes", s.stats.Votes)
}

func (s *server) statsPerformance(c *gin.Context) (any, error) {
	return statsCall(s, c, "performance", s.stats.Performance)
}

func (s *server) statsReasoning(c *gin.Context) (any, error) {
	return statsCall(s, c, "reasoning", s.stats.Reasoning)
}

func (s *server) statsDashboard(c *gin.Context) (any, error) {
	return statsCall(s, c, "dashboard", s.stats.Dashboard)
}

func (s *server) statsTools(c *gin.Context) (any, error) {
	return statsCall(s, c, "tools", s.stats.Tools)
}

func (s *server) statsWorkflows(c *gin.Context) (any, error) {
	return statsCall(s, c, "workflows", s.stats.Workflows)
}

func (s *server) statsHandoffs(c *gin.Context) (any, error) {
	return statsCall(s, c, "handoffs", s.stats.Handoffs)
}

func (s *server) statsErrors(c *gin.Context) (any, error) {
	return statsCall(s, c, "errors", s.stats.Errors)
}

func (s *server) statsOnline(c *gin.Context) (any, error) {
	return statsCall(s, c, "online", s.stats.Online)
}

func (s *server) statsBehavior(c *gin.Context) (any, error) {
	return statsCall(s, c, "behavior", s.stats.Behavior)
}
