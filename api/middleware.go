package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplane/agentplane/api/a2a"
	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/opcount"
)

// traceScope is the instrumentation scope of the API's server spans.
const traceScope = "github.com/agentplane/agentplane/api"

// traced makes each /v1 request a server span, a child of the trace context the caller sent
// (traceparent), named after its route template: never after its path, whose ids would make
// every request a name of its own. It records the method, route and status, no header and no
// query. Probes, scrapes and the queue dashboard are not traced: they would drown the requests.
//
// It sets the request's context before the handlers run and never after: a handler may leave
// work behind that still reads the request through the gin context (otelgin's middleware
// restores the request once the handlers return, which races with that work).
func traced(c *gin.Context) {
	if !strings.HasPrefix(c.Request.URL.Path, "/v1/") {
		c.Next()
		return
	}
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	ctx := otel.GetTextMapPropagator().Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
	ctx, span := otel.Tracer(traceScope).Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(c.Request.Method), semconv.HTTPRoute(route)))
	defer span.End()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	status := c.Writer.Status()
	span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}

// MaxURL is the longest request URL (path and query) the API reads; a longer one is 414.
const MaxURL = 16 << 10

// limitURL answers 414 to a URL longer than MaxURL.
func (s *server) limitURL(c *gin.Context) {
	if len(c.Request.RequestURI) > MaxURL {
		httpx.Fail(c, apperr.New(apperr.URITooLong, "uri_too_long", fmt.Sprintf("The request URL is longer than %d bytes.", MaxURL)))
		return
	}
	c.Next()
}

// bodyDeadline gives a request's body bodyTimeout to arrive: the connection's read deadline,
// lifted once the body has been read to its end, so that a stream's answer is not cut. A body
// nobody read (the request failed first, say without a key) is not waited for: the answer closes
// the connection (see httpx.Fail).
func (s *server) bodyDeadline(c *gin.Context) {
	if c.Request.ContentLength == 0 || c.Request.Body == nil || c.Request.Body == http.NoBody {
		c.Next()
		return
	}
	rc := http.NewResponseController(c.Writer)
	if err := rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)); err != nil {
		c.Next()
		return
	}
	b := &deadlineBody{ReadCloser: c.Request.Body, rc: rc}
	c.Request.Body = b
	c.Set(httpx.BodyKey, b)
	c.Next()
}

// deadlineBody is a request body read under a deadline, lifted at its end.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done atomic.Bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done.Swap(true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// ReadToEnd reports whether the body was read to its end.
func (b *deadlineBody) ReadToEnd() bool { return b.done.Load() }

// requestID keeps a sane X-Request-ID from the client or makes one, and answers with it. The
// request's span records it, and its log lines the trace id.
func (s *server) requestID(c *gin.Context) {
	id := c.GetHeader("X-Request-ID")
	if !saneRequestID(id) {
		id = ids.New()
	}
	log := s.log.With("request_id", id)
	if span := trace.SpanFromContext(c.Request.Context()); span.SpanContext().IsValid() {
		span.SetAttributes(attribute.String("agentplane.request_id", id))
		log = log.With("trace_id", span.SpanContext().TraceID().String())
	}
	c.Set(httpx.RequestIDKey, id)
	c.Set(httpx.LoggerKey, log)
	c.Header("X-Request-ID", id)
	c.Next()
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			return false
		}
	}
	return true
}

// accessLog logs one line per request and counts it in the metrics. It logs the route, never
// the headers or the query (they may carry keys).
func (s *server) accessLog(c *gin.Context) {
	start := time.Now()
	done := s.metrics.Begin()
	defer done()
	ctx, commands := opcount.With(c.Request.Context())
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	took := time.Since(start)
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	s.metrics.Request(route, c.Request.Method, c.Writer.Status(), took, commands.Load())
	httpx.Logger(c).Info("request", "method", c.Request.Method, "route", route, "status", c.Writer.Status(),
		"duration_ms", took.Milliseconds(), "bytes", c.Writer.Size(), "store_commands", commands.Load())
}

// recover turns a panic into a 500 with the error body; the process keeps serving.
func (s *server) recover(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			httpx.Logger(c).Error("panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !c.Writer.Written() {
				httpx.Fail(c, fmt.Errorf("panic: %v", p))
			}
			c.Abort()
		}
	}()
	c.Next()
}

func (s *server) notFound(c *gin.Context) {
	httpx.Fail(c, apperr.New(apperr.NotFound, "route_not_found", "No route "+c.Request.Method+" "+c.Request.URL.Path+"."))
}

func (s *server) methodNotAllowed(c *gin.Context) {
	httpx.Fail(c, apperr.New(apperr.MethodNotAllowed, "method_not_allowed", "Method "+c.Request.Method+" is not allowed on "+c.Request.URL.Path+"."))
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(c *gin.Context) (string, error) {
	h := c.GetHeader("Authorization")
	if h == "" {
		return "", apperr.New(apperr.Unauthorized, "missing_api_key", "Send your API key as: Authorization: Bearer <API_KEY>.")
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", apperr.New(apperr.Unauthorized, "malformed_authorization", "The Authorization header must be: Bearer <API_KEY>.")
	}
	return token, nil
}

// authenticate resolves the API key to its account. An agent's A2A key is refused: it reaches
// its agent's A2A endpoint only (authenticateA2A).
func (s *server) authenticate(c *gin.Context) { s.authenticateKey(c, false) }

// authenticateA2A is authenticate for the A2A door, which an agent's A2A key reaches too (the
// door answers it for its own agent only).
func (s *server) authenticateA2A(c *gin.Context) { s.authenticateKey(c, true) }

// authenticateKey resolves the API key to its principal; agentKeys lets agents' A2A keys in.
func (s *server) authenticateKey(c *gin.Context, agentKeys bool) {
	token, err := bearer(c)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	p, err := s.tenancy.Authenticate(c, token)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	if p.BotID != "" && !agentKeys {
		httpx.Fail(c, apperr.New(apperr.Unauthorized, "a2a_key_not_allowed",
			"This key is an agent's A2A key: it reaches only that agent's A2A endpoint, "+a2a.AgentsPath+"/"+p.BotID+"."))
		return
	}
	c.Set(httpx.PrincipalKey, p)
	c.Next()
}

// requireAdmin guards the admin routes and the queue dashboard with AGENTPLANE_ADMIN_TOKEN, sent
// as a Bearer token or as the password of HTTP Basic authentication; with no token configured
// they do not exist.
func (s *server) requireAdmin(c *gin.Context) {
	if s.adminToken == "" {
		s.notFound(c)
		return
	}
	token, err := bearer(c)
	if _, password, ok := c.Request.BasicAuth(); ok {
		token, err = password, nil
	}
	if err == nil && subtle.ConstantTimeCompare([]byte(token), []byte(s.adminToken)) != 1 {
		err = apperr.New(apperr.Unauthorized, "invalid_admin_token", "The admin token is not valid.")
	}
	if err != nil {
		// A browser asks for the token (as the password) at the Basic challenge: the dashboard.
		c.Header("WWW-Authenticate", `Bearer realm="agentplane", Basic realm="agentplane admin", charset="UTF-8"`)
		httpx.Fail(c, err)
		return
	}
	c.Next()
}

// remaining is what limit has left after res: the burst less the emission intervals still
// owed (res.ResetAfter), floored. redis_rate's own count truncates a float that falls just
// short of a whole number (598 of 600 after one request).
func remaining(limit redis_rate.Limit, res *redis_rate.Result) int {
	if res.Allowed == 0 {
		return 0
	}
	interval := limit.Period.Seconds() / float64(limit.Rate)
	return max(0, int(math.Floor(float64(limit.Burst)-res.ResetAfter.Seconds()/interval+1e-6)))
}

// accountBudget bounds the requests of one account this process works on at once, so that a
// tenant flooding the service takes at most its budget of it and leaves the rest to the others;
// requests beyond it wait their turn in the order they came, up to s.budgetWait, then answer 429
// account_busy.
func (s *server) accountBudget(c *gin.Context) {
	if s.budget == nil {
		c.Next()
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.budgetWait)
	release, err := s.budget.Lock(ctx, httpx.Principal(c).AccountID)
	cancel()
	if err != nil {
		httpx.Fail(c, &apperr.Error{Kind: apperr.RateLimited, Code: "account_busy", RetryAfter: 1,
			Message: "This account already has as many requests in progress as it may; retry when one has been answered."})
		return
	}
	defer release()
	c.Next()
}

// rateLimited applies the per-key (per-operator, for an operator's token) request limit (GCRA in Redis, shared by every API replica)
// and reports it in X-RateLimit-* headers.
func (s *server) rateLimited(c *gin.Context) {
	if s.rateLimit == 0 {
		c.Next()
		return
	}
	limit := redis_rate.PerMinute(s.rateLimit)
	who := "key:" + httpx.Principal(c).KeyID
	if op := httpx.Principal(c).OperatorID; op != "" {
		who = "operator:" + op
	}
	res, err := s.limiter.Allow(c, "ratelimit:"+who, limit)
	if err != nil {
		httpx.Fail(c, apperr.Unavailablef("redis", err))
		return
	}
	reset := time.Now().Add(res.ResetAfter)
	c.Header("X-RateLimit-Limit", strconv.Itoa(s.rateLimit))
	c.Header("X-RateLimit-Remaining", strconv.Itoa(remaining(limit, res)))
	c.Header("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(reset.UnixMilli())/1000)), 10))
	if res.Allowed == 0 {
		retry := int(math.Ceil(res.RetryAfter.Seconds()))
		httpx.Fail(c, &apperr.Error{Kind: apperr.RateLimited, Code: "rate_limited", RetryAfter: max(retry, 1),
			Message: fmt.Sprintf("Rate limit of %d requests per minute exceeded; retry in %d s.", s.rateLimit, max(retry, 1))})
		return
	}
	c.Next()
}
