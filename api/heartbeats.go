package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/heartbeats"
)

type heartbeatRequest struct {
	scope
	HeartbeatID string `json:"heartbeat_id"`
	heartbeats.Input
}

// configureHeartbeat creates a heartbeat of the agent, or updates the one heartbeat_id names.
func (s *server) configureHeartbeat(c *gin.Context) (any, error) {
	var req heartbeatRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return nil, err
	}
	h, err := s.heartbeats.Configure(c, req.ProjectID, b, httpx.Principal(c).AccountID, req.HeartbeatID, req.Input)
	return gin.H{"heartbeat": h}, err
}

func (s *server) readHeartbeat(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	h, err := s.heartbeats.Get(c, sc.ProjectID, b.ID, c.Query("heartbeat_id"))
	return gin.H{"heartbeat": h}, err
}

func (s *server) listHeartbeats(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.heartbeats.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "heartbeats": list, "pagination": page.Of(total)}, err
}

// heartbeatAction is a POST that names one heartbeat of the agent.
type heartbeatAction struct {
	scope
	HeartbeatID string `json:"heartbeat_id"`
}

// heartbeatOf reads a POST naming one heartbeat: the request (its heartbeat id required) and its
// agent.
func (s *server) heartbeatOf(c *gin.Context) (heartbeatAction, agents.Bot, error) {
	var req heartbeatAction
	if err := s.decoder.Decode(c, &req); err != nil {
		return req, agents.Bot{}, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return req, b, err
	}
	req.HeartbeatID, err = idOf(c, req.HeartbeatID, "heartbeat_id")
	return req, b, err
}

func (s *server) enableHeartbeat(c *gin.Context) (any, error) {
	req, b, err := s.heartbeatOf(c)
	if err != nil {
		return nil, err
	}
	h, err := s.heartbeats.Enable(c, req.ProjectID, b, req.HeartbeatID)
	return gin.H{"heartbeat": h}, err
}

func (s *server) disableHeartbeat(c *gin.Context) (any, error) {
	req, b, err := s.heartbeatOf(c)
	if err != nil {
		return nil, err
	}
	h, err := s.heartbeats.Disable(c, req.ProjectID, b.ID, req.HeartbeatID)
	return gin.H{"heartbeat": h}, err
}

// triggerHeartbeat queues a firing now; its run and its log entry go by the firing id it answers.
func (s *server) triggerHeartbeat(c *gin.Context) (any, error) {
	req, b, err := s.heartbeatOf(c)
	if err != nil {
		return nil, err
	}
	firing, err := s.heartbeats.Trigger(c, req.ProjectID, b, req.HeartbeatID)
	return gin.H{"heartbeat_id": req.HeartbeatID, "firing_id": firing, "execution_id": firing}, err
}

func (s *server) deleteHeartbeat(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.heartbeats.Delete(c, sc.ProjectID, b.ID, c.Query("heartbeat_id"))
}

// heartbeatLogs is one page of the firings of one heartbeat (heartbeat_id) or of all the agent's.
func (s *server) heartbeatLogs(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.heartbeats.Logs(c, sc.ProjectID, b.ID, c.Query("heartbeat_id"), page)
	return gin.H{"total": total, "logs": list, "pagination": page.Of(total)}, err
}

// heartbeatStats sums the firings of one heartbeat (heartbeat_id) or of all the agent's.
func (s *server) heartbeatStats(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	st, err := s.heartbeats.StatsOf(c, sc.ProjectID, b.ID, c.Query("heartbeat_id"))
	return gin.H{"stats": st}, err
}
