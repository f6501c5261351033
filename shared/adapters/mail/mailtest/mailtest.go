// Package mailtest is a local SMTP server for tests: a real go-smtp server on 127.0.0.1 that
// records every message it takes (envelope, raw bytes, header and body parts read back), and
// can require AUTH PLAIN, offer STARTTLS with a self-signed certificate, refuse the next
// messages with a reply code of the test's choosing, and stop and start listening again on
// the same address.
//
//	sink := mailtest.New(t, mailtest.Options{TLS: true, User: "agent", Password: "secret"})
//	relay, _ := mail.NewRelay(sink.URL(), mail.WithTLSConfig(sink.ClientTLS()))
//	... relay.Send(ctx, m) ...
//	got := sink.Wait(t, 1)
//	got.Header.Get("In-Reply-To"), got.Text, got.HTML
package mailtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Options configure a Sink.
type Options struct {
	// User and Password, when User is set, are the only credentials taken (AUTH PLAIN); mail
	// is refused until a client authenticates.
	User, Password string
	// TLS offers STARTTLS with a self-signed certificate for 127.0.0.1 and localhost (see
	// ClientTLS); AUTH is then taken over TLS only.
	TLS bool
	// ImplicitTLS speaks TLS from the first byte (smtps) with that certificate instead.
	ImplicitTLS bool
}

// Message is one message the sink took.
type Message struct {
	// From and To are the envelope (MAIL FROM, RCPT TO).
	From string
	To   []string
	// Raw is the message as received.
	Raw []byte
	// Header is the message's header; Text and HTML are its text/plain and text/html parts,
	// decoded, with "\n" line ends.
	Header gomail.Header
	Text   string
	HTML   string
	// Helo is the name the client greeted with; TLS says the message came over TLS; User is
	// who authenticated ("" for no one).
	Helo string
	TLS  bool
	User string
}

// Subject is the message's decoded subject.
func (m Message) Subject() string {
	s, _ := m.Header.Subject()
	return s
}

// Sink is a local SMTP server recording what it takes.
type Sink struct {
	t    testing.TB
	opts Options
	addr string
	cert *x509.Certificate
	tls  *tls.Config

	mu       sync.Mutex
	srv      *smtp.Server
	listener net.Listener
	messages []Message
	arrived  chan struct{} // closed and replaced at each message
	failures int
	failCode int
}

// New starts a sink on 127.0.0.1 (a port of its own) and stops it when the test ends.
func New(t testing.TB, opts Options) *Sink {
	t.Helper()
	s := &Sink{t: t, opts: opts, addr: "127.0.0.1:0", arrived: make(chan struct{})}
	if opts.TLS || opts.ImplicitTLS {
		s.cert, s.tls = selfSigned(t)
	}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Addr is the host:port the sink listens on.
func (s *Sink) Addr() string { return s.addr }

// URL is a relay URL for the sink: smtp://user:password@addr (smtps with ImplicitTLS; no user
// info without a User).
func (s *Sink) URL() string {
	u := url.URL{Scheme: "smtp", Host: s.addr}
	if s.opts.ImplicitTLS {
		u.Scheme = "smtps"
	}
	if s.opts.User != "" {
		u.User = url.UserPassword(s.opts.User, s.opts.Password)
	}
	return u.String()
}

// ClientTLS is a TLS configuration trusting the sink's certificate; nil without TLS.
func (s *Sink) ClientTLS() *tls.Config {
	if s.cert == nil {
		return nil
	}
	roots := x509.NewCertPool()
	roots.AddCert(s.cert)
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// Start listens again, on the address the sink first had; the test fails if it cannot.
func (s *Sink) Start() {
	s.t.Helper()
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("mailtest: listen on %s: %v", s.addr, err)
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, conn: c}, nil
	}))
	srv.Domain = "mailtest.localhost"
	srv.AllowInsecureAuth = s.tls == nil
	if s.opts.ImplicitTLS {
		l = tls.NewListener(l, s.tls)
	} else {
		srv.TLSConfig = s.tls
	}
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.mu.Lock()
	s.addr = l.Addr().String()
	s.srv, s.listener = srv, l
	s.mu.Unlock()
	go srv.Serve(l)
}

// Stop closes the listener and every connection: clients are refused until Start.
func (s *Sink) Stop() {
	s.mu.Lock()
	srv, l := s.srv, s.listener
	s.srv, s.listener = nil, nil
	s.mu.Unlock()
	if srv != nil {
		srv.Close()
		l.Close()
	}
}

// FailNext answers the next n messages with code (451, 554, ...) after their data.
func (s *Sink) FailNext(n, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures, s.failCode = n, code
}

// Messages are the messages taken so far.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Wait returns the nth message taken (counting from 1), waiting up to 10 s (or the test's
// end) for it; the test fails if it does not come.
func (s *Sink) Wait(t testing.TB, n int) Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		s.mu.Lock()
		got, arrived := len(s.messages), s.arrived
		if got >= n {
			m := s.messages[n-1]
			s.mu.Unlock()
			return m
		}
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatalf("mailtest: message %d did not come (%d came): %v", n, got, ctx.Err())
		}
	}
}

// take records m, or refuses it when the test asked for it.
func (s *Sink) take(m Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures > 0 {
		s.failures--
		return &smtp.SMTPError{Code: s.failCode, EnhancedCode: smtp.EnhancedCodeNotSet,
			Message: fmt.Sprintf("mailtest refuses this message with %d", s.failCode)}
	}
	s.messages = append(s.messages, m)
	close(s.arrived)
	s.arrived = make(chan struct{})
	return nil
}

// session is one client's transactions.
type session struct {
	s    *Sink
	conn *smtp.Conn
	user string
	from string
	to   []string
}

func (ss *session) AuthMechanisms() []string {
	if ss.s.opts.User == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, password string) error {
		if user != ss.s.opts.User || password != ss.s.opts.Password {
			return smtp.ErrAuthFailed
		}
		ss.user = user
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.opts.User != "" && ss.user == "" {
		return smtp.ErrAuthRequired
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := read(raw)
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: err.Error()}
	}
	_, m.TLS = ss.conn.TLSConnectionState()
	m.From, m.To, m.User, m.Helo = ss.from, ss.to, ss.user, ss.conn.Hostname()
	return ss.s.take(m)
}

func (ss *session) Reset() {
	ss.from, ss.to = "", nil
}

func (ss *session) Logout() error { return nil }

// read reads a message's header and its text and HTML parts.
func read(raw []byte) (Message, error) {
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		return Message{}, fmt.Errorf("mailtest: read header: %w", err)
	}
	m := Message{Raw: raw, Header: r.Header}
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return Message{}, fmt.Errorf("mailtest: read part: %w", err)
		}
		b, err := io.ReadAll(p.Body)
		if err != nil {
			return Message{}, fmt.Errorf("mailtest: read part: %w", err)
		}
		b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
		switch t, _, _ := p.Header.(interface {
			ContentType() (string, map[string]string, error)
		}).ContentType(); t {
		case "text/plain":
			m.Text = string(b)
		case "text/html":
			m.HTML = string(b)
		}
	}
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost.
func selfSigned(t testing.TB) (*x509.Certificate, *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("mailtest: key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mailtest"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("mailtest: certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("mailtest: certificate: %v", err)
	}
	return cert, &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:   tls.VersionTLS12,
	}
}
