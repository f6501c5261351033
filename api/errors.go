package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// errorBody is the JSON of every non-2xx answer. The top-level message and error.status are
// what BoostGPT's official clients read.
type errorBody struct {
	Error   errorObject `json:"error"`
	Message string      `json:"message"`
}

type errorObject struct {
	Status    int             `json:"status"`
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Details   []apperr.Detail `json:"details"`
	RequestID string          `json:"request_id"`
}

// fail answers c with err and stops the handler chain. Internal errors are logged and shown to
// users only as "Internal error.".
func fail(c *gin.Context, err error) {
	if errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
		// The client went away; nobody reads the answer.
		c.Abort()
		return
	}
	status, body, e := errorOf(c, err)
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
	if c.GetBool(openAIShape) {
		c.AbortWithStatusJSON(status, openAIErrorOf(status, e))
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

// statusOf is the HTTP status of errors of kind k.
func statusOf(k apperr.Kind) int { return statuses[k] }

// errorOf maps err to its status and body, logging internal errors and outages.
func errorOf(c *gin.Context, err error) (int, errorBody, *apperr.Error) {
	e := apperr.As(err)
	status := statusOf(e.Kind)
	switch {
	case e.Kind == apperr.Internal:
		logger(c).Error("internal error", "error", err)
		e = &apperr.Error{Kind: apperr.Internal, Code: "internal_error", Message: "Internal error."}
	case e.Kind == apperr.Unavailable:
		logger(c).Warn("dependency unavailable", "error", err)
	}
	details := e.Details
	if details == nil {
		details = []apperr.Detail{}
	}
	return status, errorBody{
		Error:   errorObject{Status: status, Code: e.Code, Message: e.Message, Details: details, RequestID: requestID(c)},
		Message: e.Message,
	}, e
}

func logger(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(loggerKey); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}
