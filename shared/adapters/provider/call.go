package provider

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/llm"
)

// Retry and error-reporting bounds.
const (
	backoffBase     = 200 * time.Millisecond
	backoffMax      = 5 * time.Second
	maxRetryAfter   = 5 * time.Second
	maxErrorMessage = 500      // characters of a provider's error message kept
	maxErrorBody    = 64 << 10 // bytes of an error response read
)

// errTimeout is the cause of a call's cancellation when its deadline passes.
var errTimeout = errors.New("provider deadline exceeded")

// call is one Complete or Stream call: its deadline and retries.
type call struct {
	m        *openAI
	parent   context.Context
	ctx      context.Context // the requests' context: parent, cancelled at the deadline with errTimeout
	cancel   context.CancelCauseFunc
	timer    *time.Timer // fires at the deadline; stopped at the first chunk of a stream
	deadline time.Time
}

// begin starts a call under ctx with m's timeout.
func (m *openAI) begin(ctx context.Context) *call {
	cctx, cancel := context.WithCancelCause(ctx)
	return &call{
		m:        m,
		parent:   ctx,
		ctx:      cctx,
		cancel:   cancel,
		timer:    time.AfterFunc(m.timeout, func() { cancel(errTimeout) }),
		deadline: time.Now().Add(m.timeout),
	}
}

// end releases the call's timer and context.
func (c *call) end() {
	c.timer.Stop()
	c.cancel(nil)
}

// stopped returns the error to report when the call's context is done: the parent's own
// error, or a timeout. It returns nil while the call may go on.
func (c *call) stopped() error {
	if err := c.parent.Err(); err != nil {
		return err
	}
	if errors.Is(context.Cause(c.ctx), errTimeout) {
		return timeoutError(c.m.timeout)
	}
	return nil
}

// sleep waits d before a retry, or until the call is stopped.
func (c *call) sleep(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.ctx.Done():
		if err := c.stopped(); err != nil {
			return err
		}
		return context.Cause(c.ctx)
	}
}

// failed reports whether to retry an attempt that ended with err before any of the answer
// was read, and after how long, and maps err to the error the call returns if not. afterAnswer
// maps the failures that happen once a successful status arrived, which are never retried.
func (c *call) failed(err error, x *exchange, attempt int, afterAnswer func(error) *apperr.Error) (time.Duration, bool, error) {
	if stop := c.stopped(); stop != nil {
		return 0, false, stop
	}
	var (
		out   *apperr.Error
		retry bool
		wait  = backoff(attempt)
		se    *statusError
	)
	switch {
	case errors.As(err, &se):
		out, retry = se.apperr(), se.retryable()
		if se.hasRetryAfter {
			wait = se.retryAfter
			retry = retry && se.retryAfter <= maxRetryAfter
		}
	case x.answered:
		return 0, false, afterAnswer(err)
	case isTimeout(err):
		return 0, false, timeoutError(0)
	default:
		out, retry = unreachable(err), transient(err)
	}
	if !retry || attempt >= c.m.maxRetries || time.Until(c.deadline) <= wait {
		return 0, false, out
	}
	return wait, true, out
}

// backoff is the wait before retry number attempt+1: exponential from backoffBase, capped at
// backoffMax, with ±25% jitter.
func backoff(attempt int) time.Duration {
	d := backoffMax
	if attempt < 5 {
		d = min(backoffBase<<attempt, backoffMax)
	}
	return d - d/4 + rand.N(d/2)
}

// exchange observes the HTTP exchange of one attempt (an SDK middleware).
type exchange struct {
	answered bool // a response with a success status arrived
}

// observe records the response and turns an error status into a *statusError, so that the SDK
// neither parses nor keeps it.
func (x *exchange) observe(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode < http.StatusBadRequest {
		x.answered = true
		return res, nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	se := &statusError{status: res.StatusCode, message: providerMessage(body)}
	se.retryAfter, se.hasRetryAfter = retryAfter(res.Header)
	return nil, se
}

// statusError is an error status answered by the provider.
type statusError struct {
	status        int
	message       string // the provider's own message, truncated
	retryAfter    time.Duration
	hasRetryAfter bool
}

func (e *statusError) Error() string {
	return fmt.Sprintf("status %d: %s", e.status, e.message)
}

// retryable reports whether the status is worth retrying: 429 and 5xx.
func (e *statusError) retryable() bool {
	return e.status == http.StatusTooManyRequests || e.status >= http.StatusInternalServerError
}

func (e *statusError) apperr() *apperr.Error {
	return llm.ProviderError(e.status, e.message)
}

// retryAfter reads the wait a response asks for: Retry-After-Ms (OpenAI's), or Retry-After in
// seconds or as an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// providerMessage extracts the message of an error body: error.message of an OpenAI-style
// body, else error or message when they are strings, else the text itself; truncated.
func providerMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		case v.Detail != "":
			msg = v.Detail
		}
	}
	return truncate(strings.TrimSpace(msg), maxErrorMessage)
}

// truncate cuts s to at most n characters, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// timeoutError reports a provider that did not answer in time; d is the deadline that passed
// (0 when it was the HTTP client's).
func timeoutError(d time.Duration) *apperr.Error {
	msg := "the model provider did not answer in time"
	if d > 0 {
		msg = fmt.Sprintf("the model provider did not answer within %s", d)
	}
	return &apperr.Error{Kind: apperr.GatewayTimeout, Code: "provider_timeout", Message: msg}
}

// unreachable reports a request that got no answer: connection refused, DNS, TLS, or refused by
// the outbound request policy. The message names the failure without the network details
// (addresses of resolvers or hosts), which stay in Err for the logs.
func unreachable(err error) *apperr.Error {
	var (
		dns  *net.DNSError
		cert *tls.CertificateVerificationError
		rec  tls.RecordHeaderError
	)
	reason := "connection failed"
	switch {
	case errors.Is(err, safehttp.ErrBlocked):
		reason = "blocked by the outbound request policy"
		var ue *url.Error
		if errors.As(err, &ue) {
			reason += ": " + ue.Err.Error()
		}
	case errors.As(err, &dns) && dns.IsNotFound:
		reason = "host not found"
	case errors.As(err, &dns):
		reason = "host name lookup failed"
	case errors.As(err, &cert):
		reason = "invalid tls certificate"
	case errors.As(err, &rec):
		reason = "tls handshake failed (the server may not speak https)"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		reason = "connection reset"
	}
	return &apperr.Error{Kind: apperr.BadGateway, Code: "provider_unreachable",
		Message: "cannot reach the model provider: " + reason, Err: err}
}

// badAnswer reports a successful status whose answer could not be read.
func badAnswer(err error) *apperr.Error {
	return &apperr.Error{Kind: apperr.BadGateway, Code: "provider_error",
		Message: "the model provider's answer could not be read", Err: err}
}

// streamError reports a stream that failed after it began: an error event from the provider or
// a broken connection.
func streamError(err error) *apperr.Error {
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return &apperr.Error{Kind: apperr.BadGateway, Code: "provider_stream_error",
			Message: "the model provider reported an error mid-stream: " + providerMessage(se.Event.Data)}
	}
	return &apperr.Error{Kind: apperr.BadGateway, Code: "provider_stream_error",
		Message: "the model provider's stream broke off", Err: err}
}

// isTimeout reports a timeout of the HTTP client or the network.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// transient reports whether a failed request may succeed if sent again: it got no answer, and
// not because of the outbound policy, an unknown host or a TLS failure.
func transient(err error) bool {
	var (
		ue   *url.Error
		dns  *net.DNSError
		cert *tls.CertificateVerificationError
		rec  tls.RecordHeaderError
	)
	switch {
	case !errors.As(err, &ue), safehttp.Permanent(err):
		return false
	case errors.As(err, &dns) && dns.IsNotFound:
		return false
	case errors.As(err, &cert), errors.As(err, &rec):
		return false
	}
	return true
}
