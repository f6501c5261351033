package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// handler is the shape of every endpoint: it returns the body of a 200 answer, or an error that
// fail maps to its status.
type handler func(c *gin.Context) (any, error)

// handle adapts a handler to gin.
func handle(h handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := h(c)
		if err != nil {
			fail(c, err)
			return
		}
		c.JSON(http.StatusOK, body)
	}
}

// bind decodes the body into req and authorises the project and agent it names (a body's ids
// win over the query's).
func (s *server) bind(c *gin.Context, req any, sc *scope) (string, error) {
	if err := s.decode(c, req); err != nil {
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
