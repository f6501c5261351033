package mail

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Config is the listener's configuration; a zero field takes its default.
type Config struct {
	// Domain is the deployment's mail domain: the listener takes mail for <local>@Domain only.
	Domain string
	// MaxMessageBytes is the largest message taken (default 10 MiB); it is advertised in EHLO
	// (SIZE) and a larger one is refused with 552.
	MaxMessageBytes int
	// MaxAttachmentBytes is the largest attachment kept (default 5 MiB); a larger one is
	// listed with its size and no data.
	MaxAttachmentBytes int
	// MaxRecipients is the most recipients of one message (default 20); more are answered 452.
	MaxRecipients int
	// ReadTimeout and WriteTimeout bound each read and write of a connection (default a
	// minute each).
	ReadTimeout, WriteTimeout time.Duration
	// DeliverTimeout bounds a call of Mailboxes.Accepts or Deliver (default 30 s).
	DeliverTimeout time.Duration
	// Logger logs refused and failed messages (default slog.Default()).
	Logger *slog.Logger
}

// The defaults of Config.
const (
	DefaultMaxMessageBytes    = 10 << 20
	DefaultMaxAttachmentBytes = 5 << 20
	DefaultMaxRecipients      = 20
	defaultIOTimeout          = time.Minute
	defaultDeliverTimeout     = 30 * time.Second
)

func (c Config) withDefaults() Config {
	c.Domain = strings.ToLower(strings.TrimSuffix(c.Domain, "."))
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MaxAttachmentBytes <= 0 {
		c.MaxAttachmentBytes = DefaultMaxAttachmentBytes
	}
	if c.MaxRecipients <= 0 {
		c.MaxRecipients = DefaultMaxRecipients
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = defaultIOTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = defaultIOTimeout
	}
	if c.DeliverTimeout <= 0 {
		c.DeliverTimeout = defaultDeliverTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Server is the SMTP listener of the agents' inboxes.
type Server struct {
	cfg   Config
	boxes email.Mailboxes
	smtp  *smtp.Server
	// ctx is the context of the calls to boxes; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	addr      net.Addr
	listeners []net.Listener
	conns     map[*conn]struct{}
	closed    bool
}

// NewServer returns a listener taking mail for cfg.Domain into boxes.
func NewServer(cfg Config, boxes email.Mailboxes) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.Domain == "" {
		return nil, apperr.Invalidf("domain", "the mail domain is required")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, boxes: boxes, ctx: ctx, cancel: cancel, conns: map[*conn]struct{}{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &session{s: s}, nil
	}))
	srv.Domain = cfg.Domain
	srv.MaxMessageBytes = int64(cfg.MaxMessageBytes)
	srv.MaxRecipients = cfg.MaxRecipients
	srv.ReadTimeout = cfg.ReadTimeout
	srv.WriteTimeout = cfg.WriteTimeout
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = slogPrinter{cfg.Logger}
	s.smtp = srv
	return s, nil
}

// Listen listens on the TCP address addr (":2525", "127.0.0.1:0"); Serve then takes its
// connections and Addr says where it listens.
func (s *Server) Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("smtp listen on %s: %w", addr, err)
	}
	s.mu.Lock()
	s.addr = l.Addr()
	s.mu.Unlock()
	return l, nil
}

// Addr is the address Listen listens on (the port chosen for ":0"); nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Serve takes SMTP connections on l until Shutdown or Close; it returns nil then.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	if s.addr == nil {
		s.addr = l.Addr()
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	return s.smtp.Serve(listener{l, s})
}

// stopListening closes the listeners Serve was given, also one go-smtp was not yet told of.
func (s *Server) stopListening() {
	s.mu.Lock()
	s.closed = true
	ls := s.listeners
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
}

// Shutdown stops listening and waits for the connections to end, up to ctx; then it cuts
// those still open and returns ctx's error (a message whose DATA was not answered was not
// acknowledged: its sender tries again).
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.smtp.Shutdown(ctx)
	s.stopListening()
	s.cancel()
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	if err != nil {
		s.cutConnections()
	}
	return err
}

// Close stops listening and closes every connection at once.
func (s *Server) Close() error {
	s.cancel()
	err := s.smtp.Close()
	s.stopListening()
	s.cutConnections()
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	return err
}

// cutConnections closes the connections still open.
func (s *Server) cutConnections() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// listener keeps the connections it accepts in the server's set, for Shutdown to cut those
// that outlast it (go-smtp's Shutdown only waits for them).
type listener struct {
	net.Listener
	s *Server
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &conn{Conn: c, s: l.s}
	l.s.mu.Lock()
	l.s.conns[tc] = struct{}{}
	l.s.mu.Unlock()
	return tc, nil
}

// conn is an accepted connection that leaves the server's set when it closes.
type conn struct {
	net.Conn
	s *Server
}

func (c *conn) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// slogPrinter is go-smtp's error log as a slog.Logger.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, v ...any) {
	p.log.Warn("smtp listener", "error", fmt.Sprintf(format, v...))
}

func (p slogPrinter) Println(v ...any) {
	p.log.Warn("smtp listener", "error", strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}

// The listener's refusals.
var (
	errRelayDenied = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1},
		Message: "Relay not permitted: this server takes mail for its own domain only"}
	errNoMailbox = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1},
		Message: "No such mailbox here"}
	errTryLater = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "Mailbox temporarily unavailable; try again later"}
)

// session is one SMTP transaction after another on a connection.
type session struct {
	s          *Server
	from       string
	recipients []string
}

func (ss *session) Reset() {
	ss.from = ""
	ss.recipients = nil
}

func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	ss.from = from
	return nil
}

// Rcpt takes <local>@Domain when the inboxes accept local.
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	at := strings.LastIndexByte(to, '@')
	if at <= 0 || !strings.EqualFold(strings.TrimSuffix(to[at+1:], "."), ss.s.cfg.Domain) {
		return errRelayDenied
	}
	local := strings.ToLower(to[:at])
	ctx, cancel := context.WithTimeout(ss.s.ctx, ss.s.cfg.DeliverTimeout)
	defer cancel()
	if err := ss.s.boxes.Accepts(ctx, local); err != nil {
		if kind := apperr.As(err).Kind; kind == apperr.NotFound || kind == apperr.Invalid {
			return errNoMailbox
		}
		ss.s.cfg.Logger.Warn("smtp listener: cannot tell whether a mailbox exists", "local", local, "error", err)
		return errTryLater
	}
	if addr := local + "@" + ss.s.cfg.Domain; !slices.Contains(ss.recipients, addr) {
		ss.recipients = append(ss.recipients, addr)
	}
	return nil
}

// Data reads the message and delivers it before answering 250.
func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	in, err := readMessage(raw, ss.s.cfg.MaxAttachmentBytes)
	if err != nil {
		ss.s.cfg.Logger.Info("smtp listener: refused an unreadable message", "from", ss.from, "error", err)
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0},
			Message: "Message could not be read as MIME: " + oneLine(err.Error())}
	}
	in.EnvelopeFrom = ss.from
	in.Recipients = append([]string(nil), ss.recipients...)
	in.Automatic = in.Automatic || ss.from == ""
	ctx, cancel := context.WithTimeout(ss.s.ctx, ss.s.cfg.DeliverTimeout)
	defer cancel()
	if err := ss.s.boxes.Deliver(ctx, in); err != nil {
		ss.s.cfg.Logger.Warn("smtp listener: delivery failed", "from", ss.from, "recipients", in.Recipients, "error", err)
		return errTryLater
	}
	return nil
}

// oneLine is s fit for an SMTP reply: one line, at most 200 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
