package mail

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"net"
	"net/smtp"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Relay sends mail through an SMTP relay: it implements email.Sender.
type Relay struct {
	host, port string
	// implicitTLS is smtps: TLS from the first byte; else STARTTLS when the relay offers it.
	implicitTLS    bool
	user, password string
	tls            *tls.Config
	helo           string
}

// RelayOption configures a Relay.
type RelayOption func(*Relay)

// WithTLSConfig has the relay's certificate checked by cfg (a test's pool of roots) instead of
// the system's roots; nil keeps the default.
func WithTLSConfig(cfg *tls.Config) RelayOption {
	return func(r *Relay) {
		if cfg != nil {
			r.tls = cfg.Clone()
		}
	}
}

// WithHelo is the name the relay is greeted with (default "localhost").
func WithHelo(name string) RelayOption {
	return func(r *Relay) { r.helo = name }
}

// NewRelay returns a Relay for rawURL: smtp://user:password@host:port (STARTTLS when the relay
// offers it, port 587 by default) or smtps://... (implicit TLS, port 465 by default); with no
// user it does not authenticate.
func NewRelay(rawURL string, opts ...RelayOption) (*Relay, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, apperr.Invalidf("relay_url", "not a URL")
	}
	r := &Relay{host: u.Hostname(), port: u.Port(), helo: "localhost"}
	switch u.Scheme {
	case "smtp":
		r.port = cmp.Or(r.port, "587")
	case "smtps":
		r.implicitTLS = true
		r.port = cmp.Or(r.port, "465")
	default:
		return nil, apperr.Invalidf("relay_url", "the scheme is smtp or smtps, not %q", u.Scheme)
	}
	if r.host == "" {
		return nil, apperr.Invalidf("relay_url", "the URL names no host")
	}
	if u.User != nil {
		r.user = u.User.Username()
		r.password, _ = u.User.Password()
	}
	r.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	for _, o := range opts {
		o(r)
	}
	if r.tls.ServerName == "" {
		r.tls.ServerName = r.host
	}
	return r, nil
}

// Send sends m: an error of kind apperr.Unavailable when the relay cannot be reached in time
// or answers 4xx (try again later), another kind when it refuses the message (5xx).
func (r *Relay) Send(ctx context.Context, m email.Outgoing) error {
	msg, err := compose(m)
	if err != nil {
		return err
	}
	to := make([]string, 0, len(m.To))
	for _, a := range m.To {
		to = append(to, a.Address)
	}
	if len(to) == 0 {
		return apperr.Invalidf("to", "a message needs a recipient")
	}
	return r.classify(ctx, r.send(ctx, m.From.Address, to, msg))
}

// send talks to the relay: EHLO, STARTTLS when offered, AUTH PLAIN with credentials, the
// message, QUIT; ctx's deadline bounds all of it and its end cuts the connection. The client
// is net/smtp's: go-smtp's client cannot start TLS only when the relay offers it, and
// net/smtp's PLAIN sends credentials only over TLS or to localhost.
func (r *Relay) send(ctx context.Context, from string, to []string, msg []byte) error {
	addr := net.JoinHostPort(r.host, r.port)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	if r.implicitTLS {
		tc := tls.Client(conn, r.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, r.host)
	if err != nil {
		return err
	}
	if err := c.Hello(r.helo); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); ok && !r.implicitTLS {
		if err := c.StartTLS(r.tls); err != nil {
			return err
		}
	}
	if r.user != "" {
		if _, isTLS := c.TLSConnectionState(); !isTLS && !loopback(r.host) {
			return apperr.New(apperr.BadGateway, "relay_insecure_auth",
				"the mail relay offers no TLS: credentials are sent only over TLS or to a relay on this machine")
		}
		if err := c.Auth(smtp.PlainAuth("", r.user, r.password, r.host)); err != nil {
			return err
		}
	}
	if err := c.Mail(from); err != nil {
		return err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// loopback reports whether host names this machine as net/smtp's PLAIN sees it.
func loopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// classify gives err its apperr kind: Unavailable for what may pass (the relay unreachable,
// slow, or answering 4xx), BadGateway for the relay's 5xx refusals and what it must mend (an
// untrusted certificate, no TLS for credentials).
func (r *Relay) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	var pe *textproto.Error
	if errors.As(err, &pe) {
		text := fmt.Sprintf("the mail relay answered %d %s", pe.Code, pe.Msg)
		switch {
		case pe.Code >= 400 && pe.Code < 500:
			return apperr.Unavailablef("mail relay", errors.New(text))
		case pe.Code == 535 || pe.Code == 530:
			return &apperr.Error{Kind: apperr.BadGateway, Code: "relay_auth_refused", Message: text, Err: err}
		}
		return &apperr.Error{Kind: apperr.BadGateway, Code: "relay_refused", Message: text, Err: err}
	}
	if ctx.Err() != nil {
		return apperr.Unavailablef("mail relay", fmt.Errorf("%w: %w", ctx.Err(), err))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The connection's deadline is the context's: it may pass a moment before ctx's timer.
		return apperr.Unavailablef("mail relay", fmt.Errorf("%w: %w", context.DeadlineExceeded, err))
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return &apperr.Error{Kind: apperr.BadGateway, Code: "relay_tls_refused",
			Message: "the mail relay's certificate is not trusted", Err: err}
	}
	return apperr.Unavailablef("mail relay", err)
}

// compose writes m as a MIME message: its header fields (a new Message-ID at the sender's
// domain when m has none) and a multipart/alternative body of text/plain and text/html, UTF-8
// and quoted-printable.
func compose(m email.Outgoing) ([]byte, error) {
	var h gomail.Header
	h.SetDate(time.Now())
	h.SetAddressList("From", []*gomail.Address{{Name: m.From.Name, Address: m.From.Address}})
	to := make([]*gomail.Address, 0, len(m.To))
	for _, a := range m.To {
		to = append(to, &gomail.Address{Name: a.Name, Address: a.Address})
	}
	h.SetAddressList("To", to)
	h.SetSubject(m.Subject)
	if m.MessageID == "" {
		_, domain, _ := strings.Cut(m.From.Address, "@")
		m.MessageID = NewMessageID(domain)
	}
	h.SetMessageID(m.MessageID)
	if m.InReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{m.InReplyTo})
	}
	h.SetMsgIDList("References", m.References)
	h.Set("MIME-Version", "1.0")
	for k, v := range m.Header {
		if strings.ContainsAny(k+v, "\r\n") {
			return nil, apperr.Invalidf("header", "the field %q holds a line break", k)
		}
		h.Set(k, v)
	}
	var buf bytes.Buffer
	w, err := gomail.CreateInlineWriter(&buf, h)
	if err != nil {
		return nil, fmt.Errorf("compose mail: %w", err)
	}
	for _, part := range []struct{ contentType, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		if err := writePart(w, part.contentType, part.body); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("compose mail: %w", err)
	}
	return buf.Bytes(), nil
}

// writePart writes one alternative of the body.
func writePart(w *gomail.InlineWriter, contentType, body string) error {
	var h gomail.InlineHeader
	h.SetContentType(contentType, map[string]string{"charset": "utf-8"})
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	pw, err := w.CreatePart(h)
	if err != nil {
		return fmt.Errorf("compose mail: %w", err)
	}
	if _, err := io.WriteString(pw, body); err != nil {
		return fmt.Errorf("compose mail: %w", err)
	}
	return pw.Close()
}

// NewMessageID returns a new, unique message id at domain (without angle brackets).
func NewMessageID(domain string) string {
	b := make([]byte, 16)
	rand.Read(b)
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	return strconv.FormatInt(time.Now().UnixMilli(), 36) + "." + strings.ToLower(enc.EncodeToString(b)) + "@" + domain
}
