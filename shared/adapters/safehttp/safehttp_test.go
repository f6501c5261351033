package safehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"code.dny.dev/ssrf"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// testTimeout bounds every request in these tests.
const testTimeout = 2 * time.Second

// countingListener counts the connections its server accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// server is an httptest server on 127.0.0.1 that counts its connections.
type server struct {
	*httptest.Server
	ln *countingListener
}

func newServer(t *testing.T, h http.Handler) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{Server: httptest.NewUnstartedServer(h), ln: &countingListener{Listener: ln}}
	s.Listener.Close()
	s.Listener = s.ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *server) port() string {
	return strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port)
}

// assertNoConnections fails unless s accepted no connection so far. It makes one request of
// its own with a plain client first: the listener accepts in order, so once that request is
// answered every earlier connection has been counted.
func (s *server) assertNoConnections(t *testing.T) {
	t.Helper()
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: testTimeout}
	resp, err := plain.Get(s.URL)
	if err != nil {
		t.Fatalf("control request: %v", err)
	}
	resp.Body.Close()
	if n := s.ln.accepted.Load() - 1; n != 0 {
		t.Errorf("server accepted %d connection(s) from the guarded client, want 0", n)
	}
}

func okHandler(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, body)
	})
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestGuardRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	srv := newServer(t, okHandler("secret"))
	port := srv.port()
	c := New(Options{Timeout: testTimeout})
	urls := []string{
		"http://127.0.0.1:PORT/",
		"http://localhost:PORT/",
		"http://2130706433:PORT/",
		"http://0x7f000001:PORT/",
		"http://0177.0.0.1:PORT/",
		"http://127.1:PORT/",
		"http://127.0.0.1.:PORT/",
		"http://１２７.０.０.１:PORT/",
		"http://[::ffff:127.0.0.1]:PORT/",
		"http://[::1]:PORT/",
		"http://0.0.0.0:PORT/",
		"http://0:PORT/",
		"file:///etc/passwd",
		"http://user:pass@example.com/",
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/",
		"http://100.64.0.1/",
		"http://192.168.1.1/",
		"http://example.com:8080/",
	}
	for _, raw := range urls {
		raw = strings.ReplaceAll(raw, "PORT", port)
		t.Run(raw, func(t *testing.T) {
			if _, err := c.CheckURL(raw); !errors.Is(err, ErrBlocked) {
				t.Errorf("CheckURL: err = %v, want ErrBlocked", err)
			}
			_, err := c.Fetch(testContext(t), raw)
			if !errors.Is(err, ErrBlocked) || !Permanent(err) {
				t.Errorf("Fetch: err = %v, want a permanent ErrBlocked", err)
			}
			req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, raw, strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := c.Do(req); !errors.Is(err, ErrBlocked) {
				t.Errorf("Do: resp = %v, err = %v, want ErrBlocked", resp, err)
			}
			if resp, err := c.HTTPClient().Get(raw); !errors.Is(err, ErrBlocked) {
				t.Errorf("HTTPClient().Get: resp = %v, err = %v, want ErrBlocked", resp, err)
			}
		})
	}
	srv.assertNoConnections(t)
}

func TestBlockedErrorMessages(t *testing.T) {
	t.Parallel()
	c := New(Options{Timeout: testTimeout})
	tests := []struct{ url, want string }{
		{"http://127.0.0.1/", `fetching "http://127.0.0.1/": address 127.0.0.1 is in a blocked range (loopback)`},
		{"http://0x7f000001/", `fetching "http://0x7f000001/": address 127.0.0.1 is in a blocked range (loopback)`},
		{"http://[::ffff:10.1.2.3]/", `fetching "http://[::ffff:10.1.2.3]/": address ::ffff:10.1.2.3 is in a blocked range (private network)`},
		{"http://169.254.169.254/latest/meta-data/", `fetching "http://169.254.169.254/latest/meta-data/": address 169.254.169.254 is in a blocked range (link-local, cloud metadata service)`},
		{"http://100.64.0.1/", `fetching "http://100.64.0.1/": address 100.64.0.1 is in a blocked range (shared address space (carrier-grade NAT))`},
		{"http://0.0.0.0/", `fetching "http://0.0.0.0/": address 0.0.0.0 is in a blocked range (unspecified)`},
		{"http://[64:ff9b::a9fe:a9fe]/", `fetching "http://[64:ff9b::a9fe:a9fe]/": address 64:ff9b::a9fe:a9fe is in a blocked range (NAT64)`},
		{"http://example.com:8080/", `fetching "http://example.com:8080/": port 8080 is not allowed (only 80 and 443)`},
		{"file:///etc/passwd", `fetching "file:///etc/passwd": scheme "file" is not allowed (only http and https)`},
		{"http://user:pass@example.com/", `fetching "http://user:xxxxx@example.com/": credentials in the url are not allowed`},
		{"http://1.2.3.4.5/", `fetching "http://1.2.3.4.5/": host "1.2.3.4.5" looks like a numeric address but is not a valid one`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := c.Fetch(testContext(t), tt.url)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Fetch: err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	const (
		ok        = ""
		blocked   = "blocked"
		malformed = "malformed"
	)
	tests := []struct {
		allowPrivate bool
		url          string
		want         string // ok, blocked or malformed
		host         string // u.Host when ok
	}{
		{false, "http://example.com/", ok, "example.com"},
		{false, "HTTPS://Example.COM/a?b=c", ok, "Example.COM"},
		{false, "http://example.com:80/", ok, "example.com:80"},
		{false, "https://example.com:443/", ok, "example.com:443"},
		{false, "http://8.8.8.8/", ok, "8.8.8.8"},
		{false, "http://134744072/", ok, "8.8.8.8"},
		{false, "http://0x08080808/", ok, "8.8.8.8"},
		{false, "http://010.010.010.010:443/", ok, "8.8.8.8:443"},
		{false, "http://8.526344/", ok, "8.8.8.8"},
		{false, "http://8.8.8.8./", ok, "8.8.8.8"},
		{false, "http://８.８.８.８/", ok, "8.8.8.8"},
		{false, "http://[2606:4700:4700::1111]/", ok, "[2606:4700:4700::1111]"},

		{false, "ftp://example.com/", blocked, ""},
		{false, "gopher://example.com:70/", blocked, ""},
		{false, "file:///etc/passwd", blocked, ""},
		{false, "javascript:alert(1)", blocked, ""},
		{false, "data:text/plain,hi", blocked, ""},
		{false, "http://user:pass@example.com/", blocked, ""},
		{false, "http://user@example.com/", blocked, ""},
		{false, "http://example.com:8080/", blocked, ""},
		{false, "https://example.com:8443/", blocked, ""},
		{false, "http://example.com:22/", blocked, ""},
		{false, "http://127.0.0.1/", blocked, ""},
		{false, "http://2130706433/", blocked, ""},
		{false, "http://0x7f000001/", blocked, ""},
		{false, "http://0X7F.1/", blocked, ""},
		{false, "http://0177.0.0.1/", blocked, ""},
		{false, "http://127.1/", blocked, ""},
		{false, "http://127.0.0.1./", blocked, ""},
		{false, "http://１２７。０。０。１/", blocked, ""},
		{false, "http://[::ffff:127.0.0.1]/", blocked, ""},
		{false, "http://[::ffff:7f00:1]/", blocked, ""},
		{false, "http://[::1]/", blocked, ""},
		{false, "http://[::]/", blocked, ""},
		{false, "http://0.0.0.0/", blocked, ""},
		{false, "http://0/", blocked, ""},
		{false, "http://169.254.169.254/", blocked, ""},
		{false, "http://[fd00::1]/", blocked, ""},
		{false, "http://[fe80::1%25eth0]/", blocked, ""},
		{false, "http://[64:ff9b::7f00:1]/", blocked, ""},
		{false, "http://[2001:db8::1]/", blocked, ""},
		{false, "http://10.0.0.1/", blocked, ""},
		{false, "http://172.16.0.1/", blocked, ""},
		{false, "http://100.64.0.1/", blocked, ""},
		{false, "http://192.168.1.1/", blocked, ""},
		{false, "http://224.0.0.1/", blocked, ""},
		{false, "http://255.255.255.255/", blocked, ""},
		{false, "http://1.2.3.4.5/", blocked, ""},
		{false, "http://256.0.0.1/", blocked, ""},
		{false, "http://4294967296/", blocked, ""},
		{false, "http://0x1g.0.0.1/", blocked, ""},
		{false, "http://08.0.0.1/", blocked, ""},
		{false, "http://127..1/", blocked, ""},
		{false, "http://example.123/", blocked, ""},

		{false, "http://example.com:99999/", malformed, ""},
		{false, "http://example.com:0/", malformed, ""},
		{false, "http:///path", malformed, ""},
		{false, "http:example.com", malformed, ""},
		{false, "http://[::1/", malformed, ""},
		{false, "http://[zz::1]/", malformed, ""},
		{false, "http://exa mple.com/", malformed, ""},
		{false, "http://%31%32%37.0.0.1/", malformed, ""},

		{true, "http://127.0.0.1:8080/", ok, "127.0.0.1:8080"},
		{true, "http://0x7f000001:8080/", ok, "127.0.0.1:8080"},
		{true, "http://[::1]:9/", ok, "[::1]:9"},
		{true, "http://10.0.0.1/", ok, "10.0.0.1"},
		{true, "http://localhost:5432/", ok, "localhost:5432"},
		{true, "file:///etc/passwd", blocked, ""},
		{true, "http://user:pass@127.0.0.1/", blocked, ""},
		{true, "http://1.2.3.4.5/", blocked, ""},
		{true, "http://example.com:99999/", malformed, ""},
	}
	guarded, open := New(Options{}), New(Options{AllowPrivate: true})
	for _, tt := range tests {
		c := guarded
		if tt.allowPrivate {
			c = open
		}
		t.Run(fmt.Sprintf("allowPrivate=%t/%s", tt.allowPrivate, tt.url), func(t *testing.T) {
			u, err := c.CheckURL(tt.url)
			switch tt.want {
			case ok:
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				if u.Host != tt.host {
					t.Errorf("host = %q, want %q", u.Host, tt.host)
				}
			case blocked:
				if !errors.Is(err, ErrBlocked) || !Permanent(err) {
					t.Errorf("url = %v, err = %v, want a permanent ErrBlocked", u, err)
				}
			case malformed:
				if !errors.Is(err, errMalformedURL) || errors.Is(err, ErrBlocked) || !Permanent(err) {
					t.Errorf("url = %v, err = %v, want a permanent malformed-url error", u, err)
				}
			}
		})
	}
}

func TestDialControlRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	srv := newServer(t, okHandler("secret"))
	port, _ := strconv.ParseUint(srv.port(), 10, 16)
	portOnly := &net.Dialer{Control: dialControl(ssrf.New(ssrf.WithPorts(uint16(port))))}
	tests := []struct {
		name   string
		dialer *net.Dialer
		addr   string
		want   string
	}{
		{"loopback ip", portOnly, srv.ln.Addr().String(), "address 127.0.0.1 is in a blocked range (loopback)"},
		{"name resolving to loopback", portOnly, net.JoinHostPort("localhost", srv.port()), "is in a blocked range (loopback)"},
		{"port", newDialer(Options{}), srv.ln.Addr().String(), fmt.Sprintf("port %d is not allowed (only 80 and 443)", port)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := tt.dialer.DialContext(testContext(t), "tcp", tt.addr)
			if err == nil {
				conn.Close()
				t.Fatal("dial succeeded, want ErrBlocked")
			}
			if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrBlocked containing %q", err, tt.want)
			}
		})
	}
	srv.assertNoConnections(t)
}

func TestDialTimeGuardCoversResolvedNames(t *testing.T) {
	t.Parallel()
	c := New(Options{Timeout: testTimeout})
	const raw = "http://localhost/"
	if _, err := c.CheckURL(raw); err != nil {
		t.Fatalf("CheckURL(%q) = %v, want nil: names are checked when dialling", raw, err)
	}
	_, err := c.Fetch(testContext(t), raw)
	if !errors.Is(err, ErrBlocked) || !Permanent(err) {
		t.Fatalf("Fetch: err = %v, want a permanent ErrBlocked", err)
	}
	if want := `fetching "http://localhost/": address `; !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "is in a blocked range (loopback)") {
		t.Errorf("err = %q, want %q...(loopback)", err, want)
	}
}

// TestRedirectToBlockedTarget serves the first hop from a loopback server under the name
// origin.test (the dial seam connects that one name to it; every other address goes through
// the real guarded dialer) and checks that redirects from there to refused targets are
// stopped before any connection to them.
func TestRedirectToBlockedTarget(t *testing.T) {
	t.Parallel()
	origin := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		io.WriteString(w, "final")
	}))
	other := newServer(t, okHandler("secret"))
	guarded := newDialer(Options{})
	c := newClient(Options{Timeout: testTimeout}, func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "origin.test:80" {
			var d net.Dialer
			return d.DialContext(ctx, network, origin.ln.Addr().String())
		}
		return guarded.DialContext(ctx, network, addr)
	})
	op := other.port()
	tests := []struct{ to, want string }{
		{"http://127.0.0.1:" + op + "/", `redirect to "http://127.0.0.1:` + op + `/": address 127.0.0.1 is in a blocked range (loopback)`},
		{"http://[::1]/", `redirect to "http://[::1]/": address ::1 is in a blocked range (loopback)`},
		{"http://2130706433:" + op + "/", "address 127.0.0.1 is in a blocked range (loopback)"},
		{"http://localhost:" + op + "/", "port " + op + " is not allowed (only 80 and 443)"},
		{"http://localhost/", "is in a blocked range (loopback)"},
		{"http://169.254.169.254/latest/meta-data/", "(link-local, cloud metadata service)"},
		{"file:///etc/passwd", `scheme "file" is not allowed`},
		{"http://user:pass@origin.test/", "credentials in the url are not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.to, func(t *testing.T) {
			_, err := c.Fetch(testContext(t), "http://origin.test/?to="+url.QueryEscape(tt.to))
			if !errors.Is(err, ErrBlocked) || !Permanent(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want a permanent ErrBlocked containing %q", err, tt.want)
			}
		})
	}
	t.Run("allowed redirect", func(t *testing.T) {
		page, err := c.Fetch(testContext(t), "http://origin.test/?to=/done")
		if err != nil {
			t.Fatal(err)
		}
		if page.URL.String() != "http://origin.test/done" || string(page.Body) != "final" {
			t.Errorf("page = %s %q, want http://origin.test/done \"final\"", page.URL, page.Body)
		}
	})
	other.assertNoConnections(t)
}

func TestFetch(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("ct"))
		w.Header().Set("X-User-Agent", r.UserAgent())
		io.WriteString(w, "<p>hi</p>")
	}))
	tests := []struct {
		name, userAgent, contentType, wantType, wantUA string
	}{
		{"html with charset", "", "text/html; charset=utf-8", "text/html", defaultUserAgent},
		{"upper case", "", "Application/JSON", "application/json", defaultUserAgent},
		{"broken params", "", "TEXT/Plain; =broken", "text/plain", defaultUserAgent},
		{"custom user agent", "test-agent/2", "text/plain", "text/plain", "test-agent/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Options{AllowPrivate: true, Timeout: testTimeout, UserAgent: tt.userAgent})
			raw := srv.URL + "/page?ct=" + url.QueryEscape(tt.contentType)
			page, err := c.Fetch(testContext(t), raw)
			if err != nil {
				t.Fatal(err)
			}
			if page.URL.String() != raw || page.StatusCode != http.StatusOK || string(page.Body) != "<p>hi</p>" {
				t.Errorf("page = %s %d %q", page.URL, page.StatusCode, page.Body)
			}
			if page.ContentType != tt.wantType {
				t.Errorf("ContentType = %q, want %q", page.ContentType, tt.wantType)
			}
			if ua := page.Header.Get("X-User-Agent"); ua != tt.wantUA {
				t.Errorf("server saw User-Agent %q, want %q", ua, tt.wantUA)
			}
		})
	}
}

// TestFetchSendsNormalisedNumericHost checks that the address that was checked is the one
// requested: numeric forms are sent in dotted decimal, not handed to a resolver.
func TestFetchSendsNormalisedNumericHost(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host)
	}))
	c := New(Options{AllowPrivate: true, Timeout: testTimeout})
	want := "127.0.0.1:" + srv.port()
	for _, host := range []string{"2130706433", "0x7f000001", "0177.0.0.1", "127.1"} {
		t.Run(host, func(t *testing.T) {
			page, err := c.Fetch(testContext(t), "http://"+host+":"+srv.port()+"/")
			if err != nil {
				t.Fatal(err)
			}
			if page.URL.Host != want || string(page.Body) != want {
				t.Errorf("URL host %q, server saw Host %q; want %q", page.URL.Host, page.Body, want)
			}
		})
	}
}

func TestDoKeepsCallerUserAgent(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.UserAgent())
	}))
	c := New(Options{AllowPrivate: true, Timeout: testTimeout})
	req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "sdk/1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "sdk/1" {
		t.Errorf("body = %q, %v, want sdk/1", body, err)
	}
}

func TestRedirectLimit(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if n > 0 {
			http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusFound)
			return
		}
		io.WriteString(w, "done")
	}))
	tests := []struct {
		name         string
		maxRedirects int
		hops         int
		wantErr      bool
	}{
		{"default, 5 hops", 0, 5, false},
		{"default, 6 hops", 0, 6, true},
		{"limit 2, 2 hops", 2, 2, false},
		{"limit 2, 3 hops", 2, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Options{AllowPrivate: true, Timeout: testTimeout, MaxRedirects: tt.maxRedirects})
			page, err := c.Fetch(testContext(t), srv.URL+"/hop/"+strconv.Itoa(tt.hops))
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				if page.URL.Path != "/hop/0" || string(page.Body) != "done" {
					t.Errorf("page = %s %q, want /hop/0 \"done\"", page.URL, page.Body)
				}
				return
			}
			if !errors.Is(err, ErrBlocked) || !Permanent(err) || !strings.Contains(err.Error(), "too many redirects") {
				t.Errorf("err = %v, want a permanent ErrBlocked about too many redirects", err)
			}
		})
	}
	t.Run("negative limit returns the 3xx", func(t *testing.T) {
		c := New(Options{AllowPrivate: true, Timeout: testTimeout, MaxRedirects: -1})
		req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL+"/hop/1", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/hop/0" {
			t.Errorf("Do = %d Location %q, want 302 /hop/0", resp.StatusCode, resp.Header.Get("Location"))
		}
		_, err = c.Fetch(testContext(t), srv.URL+"/hop/1")
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusFound || Permanent(err) {
			t.Errorf("Fetch: err = %v, want a non-permanent *StatusError 302", err)
		}
	})
}

// A redirect within the origin keeps the request's headers; one to another origin (here
// another port of the same host) keeps only those that carry no credential.
func TestRedirectKeepsCredentialsWithTheirOrigin(t *testing.T) {
	t.Parallel()
	seen := make(chan http.Header, 2)
	other := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
	}))
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/here":
			http.Redirect(w, r, "/there", http.StatusTemporaryRedirect)
		case "/there":
			seen <- r.Header.Clone()
		default:
			http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
		}
	}))
	c := New(Options{AllowPrivate: true, Timeout: testTimeout})
	for _, path := range []string{"/here", "/away"} {
		req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL+path+"?token=s3cret", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("X-Api-Key", "s3cret")
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := <-seen
		same := path == "/here"
		if got := h.Get("Authorization") != "" && h.Get("X-Api-Key") != ""; got != same {
			t.Errorf("%s: credentials sent on: %v, want %v (%v)", path, got, same, h)
		}
		if h.Get("Accept") != "application/json" || (!same && strings.Contains(fmt.Sprint(h), "s3cret")) {
			t.Errorf("%s: headers %v", path, h)
		}
	}
}

func TestBodyCap(t *testing.T) {
	t.Parallel()
	const limit = 1000
	// /fixed/N sends N bytes with a Content-Length, /chunked/N flushes them in pieces without
	// one and /endless streams until the client goes away.
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("a", 100))
		kind, nstr, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if kind == "endless" {
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			return
		}
		n, _ := strconv.Atoi(nstr)
		if kind == "fixed" {
			w.Header().Set("Content-Length", nstr)
			io.WriteString(w, strings.Repeat("a", n))
			return
		}
		for ; n > 0; n -= len(chunk) {
			w.Write(chunk[:min(n, len(chunk))])
			w.(http.Flusher).Flush()
		}
	}))
	c := New(Options{AllowPrivate: true, Timeout: testTimeout, MaxBytes: limit})
	tests := []struct {
		path    string
		tooLong bool
	}{
		{"/fixed/1000", false},
		{"/chunked/1000", false},
		{"/fixed/1001", true},
		{"/chunked/1001", true},
		{"/chunked/5000", true},
		{"/endless", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			page, err := c.Fetch(testContext(t), srv.URL+tt.path)
			if tt.tooLong {
				if !errors.Is(err, ErrTooLarge) || !Permanent(err) {
					t.Errorf("Fetch: err = %v, want a permanent ErrTooLarge", err)
				}
			} else if err != nil || len(page.Body) != limit {
				t.Errorf("Fetch: err = %v, want %d bytes", err, limit)
			}

			req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if len(body) != limit || errors.Is(err, ErrTooLarge) != tt.tooLong || (err != nil) != tt.tooLong {
				t.Errorf("Do: read %d bytes, err = %v; want %d bytes, ErrTooLarge %t", len(body), err, limit, tt.tooLong)
			}
		})
	}
}

// TestFetchRefusesAnnouncedOversizeBody checks that Fetch trusts a Content-Length over the
// limit without reading: the server sends a few bytes and then stalls.
func TestFetchRefusesAnnouncedOversizeBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	c := New(Options{AllowPrivate: true, Timeout: testTimeout, MaxBytes: 1000})
	if _, err := c.Fetch(testContext(t), srv.URL); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			io.WriteString(w, "start")
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	tests := []struct {
		name       string
		timeout    time.Duration
		ctxTimeout time.Duration
		path       string
	}{
		{"slow headers", 200 * time.Millisecond, 30 * time.Second, "/slow-headers"},
		{"slow body", 200 * time.Millisecond, 30 * time.Second, "/slow-body"},
		{"caller context", 30 * time.Second, 200 * time.Millisecond, "/slow-body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := New(Options{AllowPrivate: true, Timeout: tt.timeout})
			ctx, cancel := context.WithTimeout(t.Context(), tt.ctxTimeout)
			defer cancel()
			// The other deadline is far beyond the server's 5 s: only the one under test can end
			// the fetch with a deadline error; without it the server would answer in full.
			_, err := c.Fetch(ctx, srv.URL+tt.path)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want a deadline error", err)
			}
			if Permanent(err) || errors.Is(err, ErrBlocked) {
				t.Errorf("Permanent(%v) = true, want false", err)
			}
		})
	}
}

func TestStatusErrors(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
	}))
	c := New(Options{AllowPrivate: true, Timeout: testTimeout})
	tests := []struct {
		code      int
		permanent bool
	}{
		{http.StatusBadRequest, true},
		{http.StatusUnauthorized, true},
		{http.StatusNotFound, true},
		{http.StatusGone, true},
		{http.StatusRequestTimeout, false},
		{http.StatusTooEarly, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusServiceUnavailable, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			raw := srv.URL + "/" + strconv.Itoa(tt.code)
			_, err := c.Fetch(testContext(t), raw)
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != tt.code || se.URL != raw {
				t.Fatalf("err = %#v, want *StatusError{%q, %d}", err, raw, tt.code)
			}
			if Permanent(err) != tt.permanent {
				t.Errorf("Permanent(%v) = %t, want %t", err, !tt.permanent, tt.permanent)
			}
			req, err := http.NewRequestWithContext(testContext(t), http.MethodGet, raw, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil || resp.StatusCode != tt.code {
				t.Fatalf("Do = %v, %v, want status %d and no error", resp, err, tt.code)
			}
			resp.Body.Close()
		})
	}
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"blocked", fmt.Errorf("fetching: %w", blockedf("port 22 is not allowed")), true},
		{"too large", fmt.Errorf("fetching: %w", ErrTooLarge), true},
		{"malformed url", fmt.Errorf("fetching: %w: no host", errMalformedURL), true},
		{"404", &StatusError{URL: "http://example.com/", StatusCode: 404}, true},
		{"wrapped 451", fmt.Errorf("indexing: %w", &StatusError{StatusCode: 451}), true},
		{"429", &StatusError{StatusCode: 429}, false},
		{"302", &StatusError{StatusCode: 302}, false},
		{"502", &StatusError{StatusCode: 502}, false},
		{"deadline", fmt.Errorf("fetching: %w", context.DeadlineExceeded), false},
		{"unexpected eof", io.ErrUnexpectedEOF, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Permanent(tt.err); got != tt.want {
				t.Errorf("Permanent(%v) = %t, want %t", tt.err, got, tt.want)
			}
		})
	}
}

func TestHTTPClient(t *testing.T) {
	t.Parallel()
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.UserAgent())
	}))
	hc := New(Options{AllowPrivate: true, Timeout: testTimeout}).HTTPClient()
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != defaultUserAgent {
		t.Errorf("body = %q, %v, want the default User-Agent", body, err)
	}
	if resp, err := hc.Get("file:///etc/passwd"); !errors.Is(err, ErrBlocked) {
		t.Errorf("Get(file:///etc/passwd) = %v, %v, want ErrBlocked", resp, err)
	}

	c := New(Options{Timeout: testTimeout})
	hc = c.HTTPClient()
	if hc.Timeout != testTimeout || hc.CheckRedirect == nil {
		t.Errorf("Timeout = %v, CheckRedirect set %t; want %v, true", hc.Timeout, hc.CheckRedirect != nil, testTimeout)
	}
	hc.Timeout = 0
	if c.HTTPClient().Timeout != testTimeout {
		t.Error("changing the returned client changed the Client")
	}
	if _, ok := hc.Transport.(*otelhttp.Transport); !ok {
		t.Errorf("transport %T, want the traced one", hc.Transport)
	}
	tr := newTransport(c.opts, nil)
	if tr.Proxy != nil || !tr.ForceAttemptHTTP2 || tr.TLSHandshakeTimeout == 0 || tr.ResponseHeaderTimeout == 0 {
		t.Errorf("transport: Proxy set %t, ForceAttemptHTTP2 %t, TLSHandshakeTimeout %v, ResponseHeaderTimeout %v",
			tr.Proxy != nil, tr.ForceAttemptHTTP2, tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	want := Options{Timeout: 30 * time.Second, MaxBytes: 10 << 20, MaxRedirects: 5, UserAgent: defaultUserAgent}
	if c.opts != want {
		t.Errorf("options = %+v, want %+v", c.opts, want)
	}
	if c.guard == nil {
		t.Error("guard is off by default")
	}
}

// TestProxyFromEnvironmentIgnored points HTTP_PROXY at a listener and fetches a
// non-loopback name (connected to the origin by the dial seam): the proxy must see nothing.
func TestProxyFromEnvironmentIgnored(t *testing.T) {
	proxy := newServer(t, okHandler("from proxy"))
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	origin := newServer(t, okHandler("from origin"))
	c := newClient(Options{AllowPrivate: true, Timeout: testTimeout}, func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "origin.test:80" {
			addr = origin.ln.Addr().String()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
	page, err := c.Fetch(testContext(t), "http://origin.test/")
	if err != nil {
		t.Fatal(err)
	}
	if string(page.Body) != "from origin" {
		t.Errorf("body = %q, want \"from origin\"", page.Body)
	}
	proxy.assertNoConnections(t)
}

// A request carries the trace context of its context (the W3C propagator being the process's,
// as package tracing sets it), to the server and through the checks.
func TestTraceContext(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	got := make(chan string, 1)
	srv := newServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got <- r.Header.Get("Traceparent") }))
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0xf0, 1}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/hook", nil)
	resp, err := New(Options{AllowPrivate: true, Timeout: testTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if tp := <-got; !strings.HasPrefix(tp, "00-"+sc.TraceID().String()+"-") {
		t.Fatalf("traceparent %q, want one of trace %s", tp, sc.TraceID())
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/hook", nil)
	if _, err := New(Options{Timeout: testTimeout}).Do(req); !errors.Is(err, ErrBlocked) {
		t.Fatalf("a traced request to loopback: %v, want ErrBlocked", err)
	}
}

// A host that does not exist fails for good, as a 404 does; one that cannot be reached is worth
// another try. Neither message says what the resolver is or what a name resolved to.
func TestUnreachableHosts(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	tests := []struct {
		name      string
		opts      Options
		url       string
		kind      error
		permanent bool
	}{
		{"no such host", Options{}, "http://agentplane-test.invalid/x", ErrNoSuchHost, true},
		{"no such host, private networks allowed", Options{AllowPrivate: true}, "http://localhost./x", ErrNoSuchHost, true},
		{"nothing listening", Options{AllowPrivate: true}, "http://" + closed + "/x", ErrUnreachable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.opts).Fetch(context.Background(), tt.url)
			if !errors.Is(err, tt.kind) || Permanent(err) != tt.permanent {
				t.Fatalf("error %v (permanent %t), want %v (permanent %t)", err, Permanent(err), tt.kind, tt.permanent)
			}
			for _, leak := range []string{"lookup", ":53", "dial tcp", "connect:", "10.255."} {
				if strings.Contains(err.Error(), leak) {
					t.Fatalf("error %q says %q", err, leak)
				}
			}
		})
	}
}

// TestConcurrentCallsReuseTheirConnections makes 16 requests at once to one host, twice: the
// second round reuses the first round's connections (a model provider answering many calls at
// once is one host), where net/http's default kept two and dialed the others again.
func TestConcurrentCallsReuseTheirConnections(t *testing.T) {
	t.Parallel()
	const calls = 16
	var inFlight sync.WaitGroup
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		inFlight.Done()
		inFlight.Wait() // every call of the round holds its connection until all have one
		io.WriteString(w, "ok")
	}))
	hc := New(Options{AllowPrivate: true, Timeout: testTimeout}).HTTPClient()
	for round := 1; round <= 2; round++ {
		inFlight.Add(calls)
		var done sync.WaitGroup
		for range calls {
			done.Go(func() {
				resp, err := hc.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		done.Wait()
		if n := srv.ln.accepted.Load(); n != calls {
			t.Fatalf("after round %d the server accepted %d connections, want %d (one a call, reused in the second round)", round, n, calls)
		}
	}
}
