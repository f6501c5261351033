package httpx

import (
	"log/slog"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/tenancy"
)

// What the middleware leaves in a request's context, under these keys.
const (
	RequestIDKey = "request_id"
	LoggerKey    = "logger"
	PrincipalKey = "principal"
	// BodyKey holds the request's body as the middleware wraps it: a BodyReader.
	BodyKey = "body"
)

// BodyReader is a request body that tells whether it was read to its end.
type BodyReader interface {
	ReadToEnd() bool
}

// bodyLeft reports whether c's request has a body that was not read to its end.
func bodyLeft(c *gin.Context) bool {
	b, ok := c.Get(BodyKey)
	r, isReader := b.(BodyReader)
	return ok && isReader && !r.ReadToEnd()
}

// RequestID is the request's id.
func RequestID(c *gin.Context) string { return c.GetString(RequestIDKey) }

// Logger is the request's logger (which names the request), else the default one.
func Logger(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(LoggerKey); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}

// Principal is the account and key the request's API key resolved to.
func Principal(c *gin.Context) tenancy.Principal {
	return c.MustGet(PrincipalKey).(tenancy.Principal)
}
