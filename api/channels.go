package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/channels"
)

type channelRequest struct {
	scope
	ChannelID string `json:"channel_id"`
	channels.Input
}

// baseURL is the deployment's public URL: AGENTPLANE_PUBLIC_URL, else the one the request came
// to.
func (s *server) baseURL(c *gin.Context) string {
	if s.publicURL != "" {
		return s.publicURL
	}
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host
}

// shown is the connections as a read answers them: each with its webhook URL.
func (s *server) shown(c *gin.Context, list ...channels.Connection) []channels.Connection {
	for i := range list {
		list[i] = channels.WithURL(list[i], s.baseURL(c))
	}
	return list
}

func (s *server) createChannel(c *gin.Context) (any, error) {
	var req channelRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return nil, err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return nil, err
	}
	ch, err := s.channels.Create(c, req.ProjectID, b, req.Input, s.baseURL(c))
	return gin.H{"channel": ch}, err
}

// channelOf reads a request naming one connection of the agent: the request, its agent and the
// connection's id (required).
func (s *server) channelOf(c *gin.Context) (channelRequest, agents.Bot, string, error) {
	var req channelRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return req, agents.Bot{}, "", err
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		return req, b, "", err
	}
	id, err := idOf(c, req.ChannelID, "channel_id")
	return req, b, id, err
}

func (s *server) updateChannel(c *gin.Context) (any, error) {
	req, b, id, err := s.channelOf(c)
	if err != nil {
		return nil, err
	}
	ch, err := s.channels.Update(c, req.ProjectID, b.ID, id, req.Input, s.baseURL(c))
	return gin.H{"channel": ch}, err
}

func (s *server) readChannel(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	id, err := idOf(c, "", "channel_id")
	if err != nil {
		return nil, err
	}
	ch, err := s.channels.Get(c, sc.ProjectID, b.ID, id)
	return gin.H{"channel": s.shown(c, ch)[0]}, err
}

func (s *server) listChannels(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.channels.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "channels": s.shown(c, list...), "pagination": page.Of(total)}, err
}

func (s *server) deleteChannel(c *gin.Context) (any, error) {
	req, b, id, err := s.channelOf(c)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.channels.Delete(c, req.ProjectID, b.ID, id)
}
