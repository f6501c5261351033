package httpx

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Handler is the shape of every endpoint: it returns the body of a 200 answer, or an error that
// Fail maps to its status.
type Handler func(c *gin.Context) (any, error)

// Handle adapts a Handler to gin.
func Handle(h Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, err := h(c)
		if err != nil {
			Fail(c, err)
			return
		}
		c.JSON(http.StatusOK, body)
	}
}
