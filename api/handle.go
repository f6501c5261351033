package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
)

// handle adapts a handler (the shape of every endpoint, httpx.Handler) to gin.
func handle(h httpx.Handler) gin.HandlerFunc { return httpx.Handle(h) }

// bind decodes the body into req and authorises the project and agent it names (a body's ids
// win over the query's).
func (s *server) bind(c *gin.Context, req any, sc *scope) (string, error) {
	if err := s.decoder.Decode(c, req); err != nil {
		return "", err
	}
	b, err := s.bot(c, sc)
	return b.ID, err
}

// bindID is bind, then the id named name that the body carries in *id (or else the query),
// which it sets in *id.
func (s *server) bindID(c *gin.Context, req any, sc *scope, id *string, name string) (string, error) {
	botID, err := s.bind(c, req, sc)
	if err != nil {
		return "", err
	}
	*id, err = idOf(c, *id, name)
	return botID, err
}
