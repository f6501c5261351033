// Package hooks is the door of messaging platforms: the webhook route of each channel
// connection (/hooks/{type}/{connection_id}), which hands the platform's call, as it came, to
// the channels' domain (which checks its signature) and answers what the domain says.
package hooks

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Path is the route of the webhooks: /hooks/{type}/{connection_id}.
const Path = "/hooks/:type/:connection_id"

// MaxBody bounds a webhook call's body: platforms' events are a few kilobytes.
const MaxBody = 1 << 20

// Door takes platforms' webhook calls.
type Door struct {
	Channels *channels.Service
}

// Receive takes a webhook call: a GET (a platform's verification handshake) or a POST.
func (d *Door) Receive(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		httpx.Fail(c, apperr.New(apperr.TooLarge, "body_too_large", "A webhook call's body must be at most 1 MiB."))
		return
	}
	if err != nil {
		httpx.Fail(c, apperr.New(apperr.Malformed, "body_unreadable", "The body could not be read."))
		return
	}
	answer, err := d.Channels.Receive(c.Request.Context(), c.Param("type"), c.Param("connection_id"), channels.Request{
		Method: c.Request.Method, Header: c.Request.Header, Query: c.Request.URL.Query(), Body: body, Now: time.Now()})
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	status := answer.Status
	if status == 0 {
		status = http.StatusOK
	}
	if len(answer.Body) == 0 {
		c.Status(status)
		return
	}
	c.Data(status, answer.ContentType, answer.Body)
}
