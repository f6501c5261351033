// Package apperr is the one error type of the domain: every error that reaches a user carries a
// Kind (the API maps each to an HTTP status, in one table of its own) and a snake_case code.
package apperr

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentplane/agentplane/shared/kit/keylock"
)

// Kind is the class of an error; the API maps each kind to one HTTP status.
type Kind int

// The kinds of error.
const (
	Internal Kind = iota
	Malformed
	Unauthorized
	Forbidden
	NotFound
	MethodNotAllowed
	Conflict
	TooLarge
	UnsupportedMedia
	Invalid
	RateLimited
	BadGateway
	Unavailable
	GatewayTimeout
	// Timeout is a request that did not arrive in time (its body).
	Timeout
	// URITooLong is a request whose URL is longer than the API reads.
	URITooLong
	// kinds counts the kinds; it is not one.
	kinds
)

// Kinds are all the kinds of error.
func Kinds() []Kind {
	out := make([]Kind, 0, kinds)
	for k := range kinds {
		out = append(out, k)
	}
	return out
}

// names are the kinds as words, for what keeps an error (a run's log) and reads it back.
var names = map[Kind]string{
	Internal:         "internal",
	Malformed:        "malformed",
	Unauthorized:     "unauthorized",
	Forbidden:        "forbidden",
	NotFound:         "not_found",
	MethodNotAllowed: "method_not_allowed",
	Conflict:         "conflict",
	TooLarge:         "too_large",
	UnsupportedMedia: "unsupported_media",
	Invalid:          "invalid",
	RateLimited:      "rate_limited",
	BadGateway:       "bad_gateway",
	Unavailable:      "unavailable",
	GatewayTimeout:   "gateway_timeout",
	Timeout:          "timeout",
	URITooLong:       "uri_too_long",
}

// String is the kind as a word: not_found, unavailable.
func (k Kind) String() string { return names[k] }

// KindNamed is the kind whose String is name; Internal when none is.
func KindNamed(name string) Kind {
	for k, n := range names {
		if n == name {
			return k
		}
	}
	return Internal
}

// Detail names one problem with one field (or one dependency).
type Detail struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// Error is a domain error with a code users can match on.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Details []Detail
	// RetryAfter, in seconds, is set on RateLimited errors.
	RetryAfter int
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind with code and message.
func New(kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// Invalidf returns an Invalid error about one field.
func Invalidf(field, format string, args ...any) *Error {
	problem := fmt.Sprintf(format, args...)
	return &Error{Kind: Invalid, Code: "invalid_field", Message: field + ": " + problem,
		Details: []Detail{{Field: field, Problem: problem}}}
}

// NotFoundf returns a NotFound error for a resource: "project_not_found", "Project not found.".
func NotFoundf(resource string) *Error {
	return &Error{Kind: NotFound, Code: resource + "_not_found", Message: resource + " not found"}
}

// Unavailablef wraps a failure of a dependency (mongo, redis, nats).
func Unavailablef(dependency string, err error) *Error {
	return &Error{Kind: Unavailable, Code: "dependency_unavailable",
		Message: dependency + " is unavailable; retry shortly",
		Details: []Detail{{Field: dependency, Problem: "unreachable"}}, Err: err}
}

// As returns the *Error in err's chain, or an Internal error wrapping err.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: Internal, Code: "internal_error", Message: "Internal error.", Err: err}
}

// IsNotFound reports whether err is a NotFound error.
func IsNotFound(err error) bool { return As(err).Kind == NotFound }

// Passing reports whether e may pass if what failed is tried again (a dependency down or
// failing, a model's provider among them), as against a failure of the request itself.
func Passing(e *Error) bool {
	switch e.Kind {
	case Unavailable, Internal, BadGateway, GatewayTimeout:
		return true
	}
	return false
}

// Problems collects field problems and returns them as one Invalid error.
type Problems []Detail

// Add records a problem with field.
func (p *Problems) Add(field, format string, args ...any) {
	*p = append(*p, Detail{Field: field, Problem: fmt.Sprintf(format, args...)})
}

// Err returns nil when there are no problems, else an Invalid error listing them all.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	msg := p[0].Field + ": " + p[0].Problem
	if len(p) > 1 {
		msg = fmt.Sprintf("%s (and %d more)", msg, len(p)-1)
	}
	return &Error{Kind: Invalid, Code: "invalid_field", Message: msg, Details: p}
}

// Reapply's bounds: how often it applies a change again, and the most it waits before one. The
// wait is random up to a bound that doubles from a millisecond, so writers that crossed spread
// out instead of crossing again: 32 concurrent updates of one document all land.
const (
	reapplyAttempts = 50
	reapplyMaxWait  = 64 * time.Millisecond
)

// Reapply runs apply, a read-modify-write of the resource whose writes are conditional on its
// revision, again while another request's write came between its read and its write (a
// Conflict coded resource + "_changed"), up to reapplyAttempts times with a jittered wait in
// between. It is for changes that name only what they change, which hold as well on what the
// other request left: concurrent ones all land. Changes of one document (key) in this process
// take turns on locks, so only other processes' writes can cross them: without the turns, n
// concurrent changes cost up to n(n+1)/2 reads and writes instead of n.
func Reapply[T any](ctx context.Context, locks *keylock.Locks, resource, key string, apply func() (T, error)) (T, error) {
	unlock, err := locks.Lock(ctx, key)
	if err != nil {
		var zero T
		return zero, err
	}
	defer unlock()
	for attempt := 1; ; attempt++ {
		v, err := apply()
		if e := As(err); err == nil || e.Kind != Conflict || e.Code != resource+"_changed" || attempt == reapplyAttempts {
			return v, err
		}
		bound := min(time.Millisecond<<min(attempt, 10), reapplyMaxWait)
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(rand.N(bound)):
		}
	}
}
