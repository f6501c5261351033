// Package safehttp is the one HTTP client for requests agentplane makes on a user's behalf:
// fetching web pages and documents to index, calling user-supplied model provider hosts and
// delivering webhooks. It guards against server-side request forgery (SSRF).
//
// The policy, unless [Options.AllowPrivate] is set:
//
//   - only http and https URLs, with a host and without credentials, are requested;
//   - only ports 80 and 443 are dialled;
//   - no connection is made to loopback, private (RFC 1918, IPv6 ULA), link-local (including the
//     169.254.169.254 cloud metadata service), shared (CGNAT), multicast, unspecified, reserved or
//     other special-purpose addresses, nor to IPv6 outside the global unicast range (which covers
//     IPv4-mapped and NAT64 forms). The list is the default deny list of code.dny.dev/ssrf.
//
// URLs are checked before any connection, on the first request and on every redirect; an IP
// literal host is checked there too, in any numeric form a resolver or browser would accept
// ("2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]"). Whatever a host
// name resolves to is checked again when each connection is dialled, so DNS answers, DNS
// rebinding and redirects cannot reach a refused address. Proxies from the environment are
// ignored. A redirect to another origin (scheme, host and port) carries none of the request's
// headers but a few that hold no credential (Accept, Content-Type, User-Agent, ...): the
// Authorization, cookies and API key headers set for one server never reach another.
//
// Each request (each redirect hop too) is a client span of the trace of its context, whose
// trace context it carries in its traceparent header; spans are exported without the path and
// query of the URL (package tracing).
//
// [Options.AllowPrivate] lifts the address and port checks (for local setups and tests); the
// scheme and credential checks remain.
package safehttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// Defaults of the zero [Options] fields.
const (
	defaultTimeout      = 30 * time.Second
	defaultMaxBytes     = 10 << 20
	defaultMaxRedirects = 5
	defaultUserAgent    = "agentplane/1 (+https://github.com/agentplane/agentplane)"
)

// Limits of the connection phases; each is also capped by [Options.Timeout].
const (
	dialTimeout     = 10 * time.Second
	keepAlive       = 30 * time.Second
	tlsTimeout      = 10 * time.Second
	idleConnTimeout = 90 * time.Second
	maxHeaderBytes  = 1 << 20
)

// IdleConnsPerHost is how many idle connections a host keeps for reuse: a model provider is one
// host answering many calls at once, and net/http's default of 2 closed every connection beyond
// the second after its call, to dial (and shake hands over TLS) again for the next.
const IdleConnsPerHost = 64

var (
	// ErrBlocked matches (with errors.Is) every refusal by the policy: a scheme other than
	// http or https, credentials in the URL, a port other than 80 or 443, a blocked address
	// (found in the URL or when dialling) and too many redirects.
	ErrBlocked = errors.New("blocked by the outbound request policy")
	// ErrNoSuchHost is a host name that does not resolve: permanent, as a 404 is.
	ErrNoSuchHost = errors.New("the host does not exist")
	// ErrUnreachable is a host that could not be reached (its name did not resolve for now, or
	// no connection could be made).
	ErrUnreachable = errors.New("the host could not be reached")
	// ErrTooLarge is returned when a response body is larger than [Options.MaxBytes].
	ErrTooLarge = errors.New("response body too large")

	errMalformedURL = errors.New("malformed url")
)

// Options configures a [Client]. The zero value is the guarded production setup.
type Options struct {
	// AllowPrivate lifts the address-range and port checks, for local setups and tests
	// (AGENTPLANE_ALLOW_PRIVATE_NETWORKS). Scheme and credential checks remain.
	AllowPrivate bool
	// Timeout limits a whole request, reading the body included; 30s when zero.
	Timeout time.Duration
	// MaxBytes caps the response bodies read through [Client.Do] and [Client.Fetch];
	// 10 MiB when zero.
	MaxBytes int64
	// MaxRedirects is the number of redirects followed; 5 when zero. When negative,
	// redirects are not followed and the 3xx response is returned.
	MaxRedirects int
	// UserAgent is sent when a request has none; "agentplane/1 (+https://github.com/agentplane/agentplane)"
	// when empty.
	UserAgent string
}

// Client makes SSRF-guarded HTTP requests. It is safe for concurrent use.
type Client struct {
	opts  Options        // defaults applied
	guard *ssrf.Guardian // nil when AllowPrivate
	hc    *http.Client
}

// dialFunc opens a connection, as [net.Dialer.DialContext] does.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// New returns a client with the policy of o.
func New(o Options) *Client {
	return newClient(o, newDialer(o).DialContext)
}

// newDialer returns the dialer of New: unless o.AllowPrivate, it checks the address and port
// of every connection before it is made.
func newDialer(o Options) *net.Dialer {
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive}
	if o.Timeout > 0 {
		d.Timeout = min(dialTimeout, o.Timeout)
	}
	if !o.AllowPrivate {
		d.Control = dialControl(ssrf.New())
	}
	return d
}

// newClient builds a client that opens its connections with dial. New passes the guarded
// dialer; tests pass one that reaches their loopback servers under a public-looking name.
func newClient(o Options, dial dialFunc) *Client {
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = defaultMaxRedirects
	}
	if o.UserAgent == "" {
		o.UserAgent = defaultUserAgent
	}
	c := &Client{opts: o}
	if !o.AllowPrivate {
		c.guard = ssrf.New()
	}
	c.hc = &http.Client{
		Transport:     otelhttp.NewTransport(&checkedTransport{c: c, next: newTransport(o, dial)}),
		CheckRedirect: c.checkRedirect,
		Timeout:       o.Timeout,
	}
	return c
}

// newTransport is the connection layer under the URL checks: connections opened with dial, no
// proxy, TLS 1.2 or later, idle connections kept for reuse, and the time and size limits of o
// (defaults applied).
func newTransport(o Options, dial dialFunc) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    min(tlsTimeout, o.Timeout),
		ResponseHeaderTimeout:  o.Timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        idleConnTimeout,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    IdleConnsPerHost,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
}

// HTTPClient returns the guarded [http.Client], for SDKs that take one (such as openai-go's
// option.WithHTTPClient). It checks the URL of every request and redirect, the address and
// port of every connection, the redirect limit and the timeout, sets the User-Agent when a
// request has none and uses no proxy. The timeout covers reading the body, so it also bounds
// streamed responses. Response bodies are not capped, since an SDK reads them (streams
// included) itself; callers reading whole bodies must limit them, or use [Client.Do].
func (c *Client) HTTPClient() *http.Client {
	hc := *c.hc
	return &hc
}

// Do sends req and returns the response, whatever its status, with a Body that fails with
// [ErrTooLarge] once more than [Options.MaxBytes] are read. The URL of req and of each
// redirect is checked before it is requested. The caller closes the Body. The request is
// bound to req's context.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		return nil, fmt.Errorf("fetching: %w: no url", errMalformedURL)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %q: %w", req.URL.Redacted(), innerError(err))
	}
	resp.Body = &cappedBody{rc: resp.Body, left: c.opts.MaxBytes, max: c.opts.MaxBytes}
	return resp, nil
}

// Page is a response body read by [Client.Fetch].
type Page struct {
	URL         *url.URL // final URL, after redirects
	StatusCode  int
	Header      http.Header
	ContentType string // media type only, lowercased, without parameters; empty when not sent
	Body        []byte
}

// Fetch GETs rawURL and reads the whole body, up to [Options.MaxBytes]. A final status other
// than 2xx is returned as a [*StatusError].
func (c *Client) Fetch(ctx context.Context, rawURL string) (*Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%w: %w", errMalformedURL, ue.Err)
		}
		return nil, fmt.Errorf("fetching %q: %w", rawURL, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	final := resp.Request.URL.Redacted()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{URL: final, StatusCode: resp.StatusCode}
	}
	if resp.ContentLength > c.opts.MaxBytes {
		return nil, fmt.Errorf("fetching %q: %w: %d bytes announced, limit %d", final, ErrTooLarge, resp.ContentLength, c.opts.MaxBytes)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("fetching %q: reading body: %w", final, err)
	}
	return &Page{
		URL:         resp.Request.URL,
		StatusCode:  resp.StatusCode,
		Header:      resp.Header,
		ContentType: mediaType(resp.Header.Get("Content-Type")),
		Body:        body,
	}, nil
}

// Read is [Client.Fetch] for callers that take the page's parts: its final URL, media type and
// body (the fetcher of url sources).
func (c *Client) Read(ctx context.Context, rawURL string) (*url.URL, string, []byte, error) {
	p, err := c.Fetch(ctx, rawURL)
	if err != nil {
		return nil, "", nil, err
	}
	return p.URL, p.ContentType, p.Body, nil
}

// Permanent is the package's [Permanent], for callers that hold the client behind an interface
// of theirs (the webhooks of workflows, the fetcher of sources).
func (c *Client) Permanent(err error) bool { return Permanent(err) }

// StatusError is returned by [Client.Fetch] when the final response status is not 2xx.
type StatusError struct {
	URL        string // final URL, password redacted
	StatusCode int
}

// Error describes the status for an end user.
func (e *StatusError) Error() string {
	return fmt.Sprintf("fetching %q: unexpected status %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
}

// Permanent reports whether retrying the same request cannot help: the policy refused it
// ([ErrBlocked]), the body is too large ([ErrTooLarge]), the URL is malformed, or the server
// answered with a 4xx status ([*StatusError]) other than 408, 425 and 429.
func Permanent(err error) bool {
	if errors.Is(err, ErrBlocked) || errors.Is(err, ErrTooLarge) || errors.Is(err, errMalformedURL) || errors.Is(err, ErrNoSuchHost) {
		return true
	}
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return se.StatusCode >= 400 && se.StatusCode < 500
}

// CheckURL parses raw and checks it against the policy without connecting: the scheme is http
// or https, a host is present, there are no credentials and, unless [Options.AllowPrivate],
// the port is 80 or 443 and an IP literal host is not in a blocked range. Numeric IPv4 hosts in
// any form a resolver or browser accepts (decimal, hex, octal, shortened) are rewritten to
// dotted decimal in the returned URL; numeric-looking hosts that are not valid addresses are
// refused. Host names are not resolved here: their addresses are checked when dialling.
func (c *Client) CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformedURL, innerError(err))
	}
	return c.checkURL(u)
}

// checkURL is CheckURL on a parsed URL; it returns a normalised copy.
func (c *Client) checkURL(orig *url.URL) (*url.URL, error) {
	u := *orig
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, blockedf("scheme %q is not allowed (only http and https)", u.Scheme)
	}
	if u.User != nil {
		return nil, blockedf("credentials in the url are not allowed")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, fmt.Errorf("%w: no host", errMalformedURL)
	}
	var portNum uint64
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("%w: invalid port %q", errMalformedURL, port)
		}
		portNum = n
	}
	addr, isIP, err := parseIPHost(host)
	if err != nil {
		return nil, err
	}
	if c.guard != nil && isIP {
		if err := c.guard.SafeAddr(addr); err != nil {
			return nil, blockedAddr(addr)
		}
	}
	if c.guard != nil && port != "" && portNum != 80 && portNum != 443 {
		return nil, blockedf("port %d is not allowed (only 80 and 443)", portNum)
	}
	if isIP && addr.Is4() {
		u.Host = addr.String()
		if port != "" {
			u.Host = net.JoinHostPort(u.Host, port)
		}
	}
	return &u, nil
}

// checkRedirect is the CheckRedirect of the http.Client: it enforces the redirect limit, checks
// each redirect URL and keeps the first request's credentials from other origins.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if c.opts.MaxRedirects < 0 {
		return http.ErrUseLastResponse
	}
	if len(via) > c.opts.MaxRedirects {
		return blockedf("too many redirects (more than %d)", c.opts.MaxRedirects)
	}
	if _, err := c.checkURL(req.URL); err != nil {
		return fmt.Errorf("redirect to %q: %w", req.URL.Redacted(), err)
	}
	if !SameOrigin(req.URL, via[0].URL) {
		for name := range req.Header {
			if !plainHeaders[name] {
				req.Header.Del(name)
			}
		}
	}
	return nil
}

// plainHeaders are the request headers a redirect to another origin keeps: none carries a
// credential. Every other header (Authorization, Cookie, API keys, a tool's own headers) stays
// with the origin it was set for.
// (Nor does Referer: the URL it names may carry a token in its query.)
var plainHeaders = map[string]bool{"Accept": true, "Accept-Language": true, "Content-Type": true, "User-Agent": true,
	"Traceparent": true, "Tracestate": true, "Mcp-Protocol-Version": true}

// SameOrigin reports whether a and b have the same scheme, host and port (a scheme's default
// port written or not).
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && originPort(a) == originPort(b)
}

func originPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
}

// checkedTransport checks every request URL (first hops and redirects, also for HTTPClient
// users), sends it in its normalised form and sets the default User-Agent.
type checkedTransport struct {
	c    *Client
	next http.RoundTripper
}

// RoundTrip implements [http.RoundTripper].
func (t *checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u, err := t.c.checkURL(req.URL)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	hasUA := req.Header.Get("User-Agent") != ""
	if hasUA && u.Host == req.URL.Host {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	if r.Host == req.URL.Host {
		r.Host = u.Host
	}
	r.URL = u
	if !hasUA {
		r.Header.Set("User-Agent", t.c.opts.UserAgent)
	}
	return t.next.RoundTrip(r)
}

// blockedError is a policy refusal with a message for end users; it matches ErrBlocked.
type blockedError struct{ msg string }

func (e *blockedError) Error() string        { return e.msg }
func (e *blockedError) Is(target error) bool { return target == ErrBlocked }

func blockedf(format string, args ...any) error {
	return &blockedError{msg: fmt.Sprintf(format, args...)}
}

func blockedAddr(addr netip.Addr) error {
	return blockedf("address %s is in a blocked range (%s)", addr, rangeName(addr))
}

// dialControl is the net.Dialer Control of the guard: it refuses, before connecting, every
// network, port and address that g refuses.
func dialControl(g *ssrf.Guardian) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		err := g.Safe(network, address, nil)
		if err == nil {
			return nil
		}
		ap, perr := netip.ParseAddrPort(address)
		switch {
		case perr != nil:
			return blockedf("connection to %s refused: %v", address, err)
		case errors.Is(err, ssrf.ErrProhibitedIP):
			return blockedAddr(ap.Addr())
		case errors.Is(err, ssrf.ErrProhibitedPort):
			return blockedf("port %d is not allowed (only 80 and 443)", ap.Port())
		default:
			return blockedf("connection to %s over %s refused", address, network)
		}
	}
}

// rangeName names the special-purpose range of a blocked address for error messages.
func rangeName(addr netip.Addr) string {
	a := addr.Unmap()
	cgnat := netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, 0, 0}), 10)
	metadata := netip.AddrFrom4([4]byte{169, 254, 169, 254})
	switch {
	case a.IsUnspecified() || a.Is4() && a.As4()[0] == 0:
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private network"
	case a == metadata:
		return "link-local, cloud metadata service"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case cgnat.Contains(a):
		return "shared address space (carrier-grade NAT)"
	case ssrf.IPv6NAT64Prefix.Contains(a):
		return "NAT64"
	default:
		return "reserved or special-purpose"
	}
}

// parseIPHost reports whether host (as returned by url.URL.Hostname) is an IP literal and
// which address it denotes. IPv4 hosts are read as the WHATWG URL standard and inet_aton do:
// one to four dot-separated parts, each decimal, 0x-hex or 0-octal, the last filling the
// remaining bytes, a trailing dot ignored; full-width digits and dots are folded first. A host
// whose last part is numeric but that is no valid address is refused.
func parseIPHost(host string) (netip.Addr, bool, error) {
	if strings.Contains(host, ":") {
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, false, fmt.Errorf("%w: invalid ipv6 host %q", errMalformedURL, host)
		}
		return addr, true, nil
	}
	parts := strings.Split(strings.ToLower(foldWidth(host)), ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if _, ok := parseIPv4Part(last); !ok && !isDigits(last) {
		return netip.Addr{}, false, nil
	}
	invalid := blockedf("host %q looks like a numeric address but is not a valid one", host)
	if len(parts) > 4 {
		return netip.Addr{}, false, invalid
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseIPv4Part(p)
		if !ok {
			return netip.Addr{}, false, invalid
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false, invalid
			}
			v = v<<8 | n
			continue
		}
		rest := uint(8 * (5 - len(parts)))
		if n >= 1<<rest {
			return netip.Addr{}, false, invalid
		}
		v = v<<rest | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// parseIPv4Part parses one part of a numeric IPv4 host: decimal, hex after "0x" (which alone
// is 0) or octal after a leading "0"; at most 32 bits.
func parseIPv4Part(s string) (uint64, bool) {
	digits, base := s, 10
	switch {
	case strings.HasPrefix(s, "0x"):
		digits, base = s[2:], 16
		if digits == "" {
			return 0, true
		}
	case len(s) > 1 && s[0] == '0':
		digits, base = s[1:], 8
	}
	n, err := strconv.ParseUint(digits, base, 32)
	return n, err == nil
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// foldWidth maps full-width ASCII and the ideographic and half-width full stops to ASCII, as
// IDNA mapping does before a browser or the transport reads a host.
func foldWidth(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= '\uff01' && r <= '\uff5e':
			return r - 0xfee0
		case r == '\u3002' || r == '\uff61':
			return '.'
		}
		return r
	}, s)
}

// innerError drops the *url.Error wrapper of net/http (whose message repeats the method and
// URL) and the *net.OpError around a dial-time refusal, keeping the readable cause.
func innerError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && errors.Is(oe.Err, ErrBlocked) {
		return oe.Err
	}
	var de *net.DNSError
	switch {
	case errors.As(err, &de) && de.IsNotFound:
		return &reachError{kind: ErrNoSuchHost, cause: err}
	case de != nil, oe != nil && oe.Op == "dial":
		return &reachError{kind: ErrUnreachable, cause: err}
	}
	return err
}

// reachError is a host that could not be reached, said without the resolver's address or what
// the name resolved to (an error message may reach a user); the cause stays in the chain, so a
// timeout is still a [net.Error] that says so.
type reachError struct{ kind, cause error }

func (e *reachError) Error() string   { return e.kind.Error() }
func (e *reachError) Unwrap() []error { return []error{e.kind, e.cause} }

// mediaType returns the lowercased media type of a Content-Type header, without parameters.
func mediaType(header string) string {
	if header == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil {
		mt, _, _ = strings.Cut(header, ";")
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// cappedBody fails with ErrTooLarge once more than max bytes are read.
type cappedBody struct {
	rc   io.ReadCloser
	left int64 // bytes still allowed
	max  int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = -1
		return n, b.tooLarge()
	}
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

func (b *cappedBody) tooLarge() error {
	return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
}
