// Package httpx is what every door of the API shares: the one error-kind -> HTTP status table
// and the error body, the request decoder, the event-stream writer, the handler shape, what the
// middleware leaves in a request's context (its id, logger, principal) and the turn of a chat a
// door asks of an agent. The doors (api/openai, ...) and api itself import it; it imports no door.
package httpx

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// ErrorBody is the JSON of every non-2xx answer. The top-level message and error.status are
// what BoostGPT's official clients read.
type ErrorBody struct {
	Error   ErrorObject `json:"error"`
	Message string      `json:"message"`
}

// ErrorObject is an error body's error.
type ErrorObject struct {
	Status    int             `json:"status"`
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Details   []apperr.Detail `json:"details"`
	RequestID string          `json:"request_id"`
}

// errorShapeKey holds the shape a door answers its errors in (SetErrorShape).
const errorShapeKey = "error_shape"

// ErrorShape is a door's own form of an error answered with status.
type ErrorShape func(status int, e *apperr.Error) any

// SetErrorShape makes c's errors be answered in shape rather than as an ErrorBody.
func SetErrorShape(c *gin.Context, shape ErrorShape) { c.Set(errorShapeKey, shape) }

// Fail answers c with err and stops the handler chain. Internal errors are logged and shown to
// users only as "Internal error.".
func Fail(c *gin.Context, err error) {
	if errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
		// The client went away; nobody reads the answer.
		c.Abort()
		return
	}
	status, body, e := ErrorOf(c, err)
	if bodyLeft(c) {
		// Answer at once rather than wait for the rest of a body nobody will read.
		c.Header("Connection", "close")
	}
	if e.Kind == apperr.RateLimited && e.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Kind == apperr.Unauthorized && c.Writer.Header().Get("WWW-Authenticate") == "" {
		c.Header("WWW-Authenticate", `Bearer realm="agentplane"`)
	}
	if shape, ok := c.Get(errorShapeKey); ok {
		c.AbortWithStatusJSON(status, shape.(ErrorShape)(status, e))
		return
	}
	c.AbortWithStatusJSON(status, body)
}

// statuses is the one table from error kind to HTTP status.
var statuses = map[apperr.Kind]int{
	apperr.Internal:         http.StatusInternalServerError,
	apperr.Malformed:        http.StatusBadRequest,
	apperr.Unauthorized:     http.StatusUnauthorized,
	apperr.Forbidden:        http.StatusForbidden,
	apperr.NotFound:         http.StatusNotFound,
	apperr.MethodNotAllowed: http.StatusMethodNotAllowed,
	apperr.Conflict:         http.StatusConflict,
	apperr.TooLarge:         http.StatusRequestEntityTooLarge,
	apperr.UnsupportedMedia: http.StatusUnsupportedMediaType,
	apperr.Invalid:          http.StatusUnprocessableEntity,
	apperr.RateLimited:      http.StatusTooManyRequests,
	apperr.BadGateway:       http.StatusBadGateway,
	apperr.Unavailable:      http.StatusServiceUnavailable,
	apperr.GatewayTimeout:   http.StatusGatewayTimeout,
	apperr.Timeout:          http.StatusRequestTimeout,
	apperr.URITooLong:       http.StatusRequestURITooLong,
}

// StatusOf is the HTTP status of errors of kind k.
func StatusOf(k apperr.Kind) int { return statuses[k] }

// ErrorOf maps err to its status and body, logging internal errors and outages.
func ErrorOf(c *gin.Context, err error) (int, ErrorBody, *apperr.Error) {
	e := apperr.As(err)
	status := StatusOf(e.Kind)
	switch {
	case e.Kind == apperr.Internal:
		Logger(c).Error("internal error", "error", err)
		e = &apperr.Error{Kind: apperr.Internal, Code: "internal_error", Message: "Internal error."}
	case e.Kind == apperr.Unavailable:
		Logger(c).Warn("dependency unavailable", "error", err)
	}
	details := e.Details
	if details == nil {
		details = []apperr.Detail{}
	}
	return status, ErrorBody{
		Error:   ErrorObject{Status: status, Code: e.Code, Message: e.Message, Details: details, RequestID: RequestID(c)},
		Message: e.Message,
	}, e
}
