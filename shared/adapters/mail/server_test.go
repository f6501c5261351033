package mail_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/agentplane/agentplane/shared/adapters/mail"
	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

const domain = "mail.example.com"

// boxes are inboxes in memory: the addresses they know, and what was delivered.
type boxes struct {
	mu         sync.Mutex
	known      map[string]bool
	acceptErr  error
	deliverErr error
	delivered  chan email.Inbound
}

func newBoxes(known ...string) *boxes {
	b := &boxes{known: map[string]bool{}, delivered: make(chan email.Inbound, 16)}
	for _, k := range known {
		b.known[k] = true
	}
	return b
}

func (b *boxes) Accepts(_ context.Context, local string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.acceptErr != nil {
		return b.acceptErr
	}
	if !b.known[local] {
		return apperr.NotFoundf("mailbox")
	}
	return nil
}

func (b *boxes) Deliver(_ context.Context, m email.Inbound) error {
	b.mu.Lock()
	err := b.deliverErr
	b.mu.Unlock()
	if err != nil {
		return err
	}
	b.delivered <- m
	return nil
}

// next is the next message delivered; the test fails when none comes within 10 s.
func (b *boxes) next(t *testing.T) email.Inbound {
	t.Helper()
	select {
	case m := <-b.delivered:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message was delivered")
		return email.Inbound{}
	}
}

// only is the next message delivered, which must be the only one so far: a message refused
// before it would have reached Deliver first.
func (b *boxes) only(t *testing.T) email.Inbound {
	t.Helper()
	m := b.next(t)
	select {
	case other := <-b.delivered:
		t.Errorf("another message was delivered too: %q to %v, %d bytes", other.Subject, other.Recipients, other.Size)
	default:
	}
	return m
}

// listen starts a listener for domain on 127.0.0.1 and returns its address.
func listen(t *testing.T, cfg mail.Config, b *boxes) string {
	t.Helper()
	cfg.Domain = domain
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := mail.NewServer(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s.Addr().String()
}

// dial connects an SMTP client (go-smtp's) to addr and says EHLO.
func dial(t *testing.T, addr string) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.example.org"); err != nil {
		t.Fatal(err)
	}
	return c
}

// send sends raw from from to to on c; the error is the server's answer.
func send(c *smtp.Client, from string, to []string, raw string) error {
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, raw); err != nil {
		return err
	}
	return w.Close()
}

// code is the SMTP reply code and enhanced code of err, "" when err is no SMTP reply.
func code(err error) string {
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		return fmt.Sprintf("not an SMTP reply: %v", err)
	}
	return fmt.Sprintf("%d %d.%d.%d", se.Code, se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2])
}

// crlf is s with CRLF line ends, as SMTP carries mail.
func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

const simple = `From: Bob <bob@example.org>
To: support@mail.example.com
Subject: hello
Message-ID: <simple-1@example.org>
Date: Tue, 24 Nov 2026 10:15:00 +0000

Just checking in.
`

func TestDeliverReadsEveryField(t *testing.T) {
	b := newBoxes("support")
	addr := listen(t, mail.Config{MaxAttachmentBytes: 64}, b)
	pdf := []byte("%PDF-1.4 a small invoice, under the limit")
	big := strings.Repeat("x", 100)
	subject := "Über die Rechnung – eine Frage"
	raw := crlf(`Received: from mx.example.com by mail.example.com
Authentication-Results: mx.example.com; spf=pass smtp.mailfrom=example.org; dkim=pass header.d=example.org
From: =?UTF-8?Q?Zo=C3=AB_M=C3=BCller?= <zoe@example.org>
To: Support <Support@Mail.Example.com>, other@example.net
Cc: bob@example.org
Reply-To: zoe.private@example.org
Subject: ` + mime.BEncoding.Encode("UTF-8", subject) + `
Message-ID: <CAF123.abc@mail.gmail.com>
In-Reply-To: <prev-2@mail.example.com>
References: <first-1@mail.example.com>
 <prev-2@mail.example.com>
Date: Tue, 24 Nov 2026 10:15:00 +0100
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="mixed"

--mixed
Content-Type: text/plain; charset=utf-8
Content-Disposition: inline; filename="notes.txt"

my notes
--mixed
Content-Type: multipart/alternative; boundary="alt"

--alt
Content-Type: text/plain; charset="UTF-8"
Content-Transfer-Encoding: quoted-printable

Gr=C3=BC=C3=9Fe, the invoice is attached. It is a long line that is wrapped=
 by quoted-printable.
--alt
Content-Type: text/html; charset="UTF-8"
Content-Transfer-Encoding: quoted-printable

<p>Gr=C3=BC=C3=9Fe, the <b>invoice</b> is attached.</p>
--alt--
--mixed
Content-Type: application/pdf; name="rechnung.pdf"
Content-Disposition: attachment; filename="rechnung.pdf"
Content-Transfer-Encoding: base64

` + base64.StdEncoding.EncodeToString(pdf) + `
--mixed
Content-Type: text/plain; name="big.txt"
Content-Disposition: attachment; filename="big.txt"
Content-Transfer-Encoding: base64

` + base64.StdEncoding.EncodeToString([]byte(big)) + `
--mixed--
`)
	c := dial(t, addr)
	if err := send(c, "zoe@example.org", []string{"Support@MAIL.example.com", "support@mail.example.com"}, raw); err != nil {
		t.Fatalf("send: %v", err)
	}
	m := b.next(t)
	checks := []struct {
		name      string
		got, want any
	}{
		{"envelope from", m.EnvelopeFrom, "zoe@example.org"},
		{"recipients", fmt.Sprint(m.Recipients), "[support@mail.example.com]"},
		{"from", m.From, email.Address{Name: "Zoë Müller", Address: "zoe@example.org"}},
		{"to", fmt.Sprint(m.To), fmt.Sprint([]email.Address{{Name: "Support", Address: "Support@Mail.Example.com"}, {Address: "other@example.net"}})},
		{"cc", fmt.Sprint(m.Cc), fmt.Sprint([]email.Address{{Address: "bob@example.org"}})},
		{"reply-to", fmt.Sprint(m.ReplyTo), fmt.Sprint([]email.Address{{Address: "zoe.private@example.org"}})},
		{"subject", m.Subject, subject},
		{"message id", m.MessageID, "CAF123.abc@mail.gmail.com"},
		{"in reply to", m.InReplyTo, "prev-2@mail.example.com"},
		{"references", fmt.Sprint(m.References), "[first-1@mail.example.com prev-2@mail.example.com]"},
		{"date", m.Date.UTC().Format(time.RFC3339), "2026-11-24T09:15:00Z"},
		{"text", m.Text, "Grüße, the invoice is attached. It is a long line that is wrapped by quoted-printable."},
		{"html", m.HTML, "<p>Grüße, the <b>invoice</b> is attached.</p>"},
		{"authentication results", m.AuthenticationResults, "mx.example.com; spf=pass smtp.mailfrom=example.org; dkim=pass header.d=example.org"},
		{"automatic", m.Automatic, false},
		{"size", m.Size, len(raw)},
		{"attachments", len(m.Attachments), 3},
	}
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s = %q, want %q", c.name, fmt.Sprint(c.got), fmt.Sprint(c.want))
		}
	}
	if len(m.Attachments) == 3 {
		a := m.Attachments[1]
		if a.Filename != "rechnung.pdf" || a.ContentType != "application/pdf" || a.Size != len(pdf) || string(a.Data) != string(pdf) {
			t.Errorf("attachment = %q %q %d %q, want rechnung.pdf application/pdf %d %q", a.Filename, a.ContentType, a.Size, a.Data, len(pdf), pdf)
		}
		a = m.Attachments[0]
		if a.Filename != "notes.txt" || a.ContentType != "text/plain" || string(a.Data) != "my notes" {
			t.Errorf("inline text file = %q %q %q, want notes.txt text/plain \"my notes\"", a.Filename, a.ContentType, a.Data)
		}
		a = m.Attachments[2]
		if a.Filename != "big.txt" || a.Size != len(big) || a.Data != nil {
			t.Errorf("attachment over the limit = %q size %d data %d bytes, want big.txt size %d and no data", a.Filename, a.Size, len(a.Data), len(big))
		}
	}
}

func TestDeliverDerivesTheTextOfAnHTMLOnlyMessage(t *testing.T) {
	b := newBoxes("support")
	addr := listen(t, mail.Config{}, b)
	raw := crlf(`From: shop@example.org
To: support@mail.example.com
Subject: =?ISO-8859-1?Q?Ihre_Bestellung_f=FCr_M=E4rz?=
Content-Type: text/html; charset=windows-1252
Content-Transfer-Encoding: quoted-printable

<html><head><title>Order</title></head><body>
<h1>Danke sch=F6n</h1>
<p>Your order for <b>M=E4rz</b> has shipped.</p>
</body></html>
`)
	if err := send(dial(t, addr), "shop@example.org", []string{"support@mail.example.com"}, raw); err != nil {
		t.Fatalf("send: %v", err)
	}
	m := b.next(t)
	if m.Subject != "Ihre Bestellung für März" {
		t.Errorf("subject = %q", m.Subject)
	}
	for _, want := range []string{"Danke schön", "Your order for März has shipped."} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text = %q, want it to hold %q", m.Text, want)
		}
	}
	if strings.Contains(m.Text, "<") {
		t.Errorf("text = %q holds markup", m.Text)
	}
	if !strings.Contains(m.HTML, "<h1>Danke schön</h1>") {
		t.Errorf("html = %q, want the heading decoded from windows-1252", m.HTML)
	}
}

func TestDeliverSanitisesHostileHTML(t *testing.T) {
	b := newBoxes("support")
	addr := listen(t, mail.Config{}, b)
	raw := crlf(`From: mallory@example.org
To: support@mail.example.com
Subject: click me
Content-Type: text/html; charset=utf-8

<style>body { background: url(https://evil.example/bg.png) }</style>
<p onclick="steal()">Hello <b>there</b></p>
<script>alert('xss')</script>
<img src="https://tracker.example/pixel.gif?u=1" onerror="alert(2)" alt="logo">
<a href="javascript:alert(3)">win</a> <a href="https://example.org/help">help</a>
`)
	if err := send(dial(t, addr), "mallory@example.org", []string{"support@mail.example.com"}, raw); err != nil {
		t.Fatalf("send: %v", err)
	}
	m := b.next(t)
	for _, bad := range []string{"<script", "alert", "<style", "onclick", "onerror", "tracker.example", "evil.example", "javascript:"} {
		if strings.Contains(m.HTML, bad) {
			t.Errorf("html holds %q: %s", bad, m.HTML)
		}
	}
	for _, good := range []string{"Hello <b>there</b>", `href="https://example.org/help"`, `alt="logo"`} {
		if !strings.Contains(m.HTML, good) {
			t.Errorf("html lost %q: %s", good, m.HTML)
		}
	}
	if !strings.Contains(m.Text, "Hello there") || strings.Contains(m.Text, "alert") {
		t.Errorf("text = %q", m.Text)
	}
}

func TestRecipientsAreRefused(t *testing.T) {
	cases := []struct {
		name, rcpt, want string
	}{
		{"UnknownMailbox", "nobody@mail.example.com", "550 5.1.1"},
		{"OtherDomain", "support@example.net", "550 5.7.1"},
		{"SubdomainOfTheDomain", "support@x.mail.example.com", "550 5.7.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBoxes("support")
			addr := listen(t, mail.Config{}, b)
			c := dial(t, addr)
			err := send(c, "bob@example.org", []string{tc.rcpt}, crlf(simple))
			if got := code(err); got != tc.want {
				t.Fatalf("RCPT TO %s answered %s, want %s", tc.rcpt, got, tc.want)
			}
			if err := c.Reset(); err != nil {
				t.Fatal(err)
			}
			if err := send(c, "bob@example.org", []string{"support@mail.example.com"}, crlf(simple)); err != nil {
				t.Fatalf("then a known mailbox: %v", err)
			}
			if m := b.only(t); fmt.Sprint(m.Recipients) != "[support@mail.example.com]" {
				t.Errorf("delivered to %v, want only the known mailbox", m.Recipients)
			}
		})
	}
}

func TestTooManyRecipientsAnswer452(t *testing.T) {
	addr := listen(t, mail.Config{MaxRecipients: 2}, newBoxes("a", "b", "c"))
	err := send(dial(t, addr), "bob@example.org", []string{"a@mail.example.com", "b@mail.example.com", "c@mail.example.com"}, crlf(simple))
	if got := code(err); !strings.HasPrefix(got, "452 ") {
		t.Fatalf("the third RCPT answered %s, want 452", got)
	}
}

func TestAcceptsUnavailableAnswers451(t *testing.T) {
	b := newBoxes("support")
	b.acceptErr = apperr.Unavailablef("mongo", errors.New("connection refused"))
	addr := listen(t, mail.Config{}, b)
	err := send(dial(t, addr), "bob@example.org", []string{"support@mail.example.com"}, crlf(simple))
	if got := code(err); got != "451 4.3.0" {
		t.Fatalf("RCPT answered %s, want 451 4.3.0", got)
	}
	var se *smtp.SMTPError
	if !errors.As(err, &se) || !se.Temporary() {
		t.Errorf("the client sees %v, want a temporary error", err)
	}
}

func TestDeliverFailingAnswers451(t *testing.T) {
	b := newBoxes("support")
	b.deliverErr = apperr.Unavailablef("mongo", errors.New("connection refused"))
	addr := listen(t, mail.Config{}, b)
	c := dial(t, addr)
	err := send(c, "bob@example.org", []string{"support@mail.example.com"}, crlf(simple))
	if got := code(err); got != "451 4.3.0" {
		t.Fatalf("DATA answered %s, want 451 4.3.0", got)
	}
	var se *smtp.SMTPError
	if !errors.As(err, &se) || !se.Temporary() {
		t.Errorf("the client sees %v, want a temporary error", err)
	}
	b.mu.Lock()
	b.deliverErr = nil
	b.mu.Unlock()
	if err := send(c, "bob@example.org", []string{"support@mail.example.com"}, crlf(simple)); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if m := b.next(t); m.MessageID != "simple-1@example.org" {
		t.Errorf("the retry delivered %q", m.MessageID)
	}
}

func TestOversizedMessagesAreRefused(t *testing.T) {
	b := newBoxes("support")
	addr := listen(t, mail.Config{MaxMessageBytes: 1024}, b)
	body := crlf(simple) + strings.Repeat("a line of padding to pass the limit\r\n", 40)

	t.Run("AtData", func(t *testing.T) {
		err := send(dial(t, addr), "bob@example.org", []string{"support@mail.example.com"}, body)
		if got := code(err); got != "552 5.3.4" {
			t.Fatalf("DATA answered %s, want 552 5.3.4", got)
		}
	})
	t.Run("BySize", func(t *testing.T) {
		c := dial(t, addr)
		if ok, size := c.Extension("SIZE"); !ok || size != "1024" {
			t.Fatalf("EHLO advertised SIZE %v %q, want 1024", ok, size)
		}
		err := c.Mail("bob@example.org", &smtp.MailOptions{Size: int64(len(body))})
		if got := code(err); !strings.HasPrefix(got, "552 ") {
			t.Fatalf("MAIL FROM with SIZE=%d answered %s, want 552", len(body), got)
		}
	})
	t.Run("NothingDelivered", func(t *testing.T) {
		if err := send(dial(t, addr), "bob@example.org", []string{"support@mail.example.com"}, crlf(simple)); err != nil {
			t.Fatal(err)
		}
		if m := b.only(t); m.Subject != "hello" {
			t.Fatalf("delivered %q, want the small message only", m.Subject)
		}
	})
}

func TestUnreadableMessageAnswers554(t *testing.T) {
	b := newBoxes("support")
	addr := listen(t, mail.Config{}, b)
	raw := crlf("From: bob@example.org\nthis line is no header field\nSubject: broken\n\nbody\n")
	err := send(dial(t, addr), "bob@example.org", []string{"support@mail.example.com"}, raw)
	if got := code(err); got != "554 5.6.0" {
		t.Fatalf("DATA answered %s, want 554 5.6.0", got)
	}
	var se *smtp.SMTPError
	if errors.As(err, &se) && !strings.Contains(se.Message, "could not be read as MIME") {
		t.Errorf("the reply says %q", se.Message)
	}
}

func TestAutomaticMessages(t *testing.T) {
	b := newBoxes("support")
	addr := listen(t, mail.Config{}, b)
	cases := []struct {
		name, from, header string
		want               bool
	}{
		{"Person", "bob@example.org", "", false},
		{"AutoSubmittedNo", "bob@example.org", "Auto-Submitted: no\n", false},
		{"AutoReplied", "bob@example.org", "Auto-Submitted: auto-replied\n", true},
		{"AutoGenerated", "bob@example.org", "Auto-Submitted: Auto-Generated; owner-email=\"x@example.org\"\n", true},
		{"PrecedenceBulk", "bob@example.org", "Precedence: bulk\n", true},
		{"PrecedenceJunk", "bob@example.org", "Precedence: junk\n", true},
		{"PrecedenceList", "bob@example.org", "Precedence: list\n", true},
		{"PrecedenceFirstClass", "bob@example.org", "Precedence: first-class\n", false},
		{"ListId", "bob@example.org", "List-Id: Announcements <announce.example.org>\n", true},
		{"MailerDaemon", "bob@example.org", "From: Mail Delivery System <MAILER-DAEMON@example.org>\n", true},
		{"Postmaster", "bob@example.org", "From: postmaster@example.org\n", true},
		{"NullSender", "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := "From: Bob <bob@example.org>\n"
			if strings.HasPrefix(tc.header, "From:") {
				from = ""
			}
			raw := crlf(from + tc.header + "To: support@mail.example.com\nSubject: " + tc.name + "\n\nhello\n")
			if err := send(dial(t, addr), tc.from, []string{"support@mail.example.com"}, raw); err != nil {
				t.Fatal(err)
			}
			m := b.next(t)
			if m.Subject != tc.name {
				t.Fatalf("delivered %q, want %q", m.Subject, tc.name)
			}
			if m.Automatic != tc.want {
				t.Errorf("automatic = %v, want %v", m.Automatic, tc.want)
			}
		})
	}
}

func TestServerListensOnAChosenPortAndShutsDown(t *testing.T) {
	s, err := mail.NewServer(mail.Config{Domain: domain, Logger: slog.New(slog.DiscardHandler)}, newBoxes())
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Addr().String(); strings.HasSuffix(a, ":0") || !strings.HasPrefix(a, "127.0.0.1:") {
		t.Fatalf("Addr = %s, want the chosen port", a)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	c := dial(t, s.Addr().String())
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
	if _, err := smtp.Dial(s.Addr().String()); err == nil {
		t.Fatal("the listener still takes connections after Shutdown")
	}
}

func TestNewServerNeedsADomain(t *testing.T) {
	_, err := mail.NewServer(mail.Config{}, newBoxes())
	if e := apperr.As(err); e.Kind != apperr.Invalid {
		t.Fatalf("NewServer without a domain: %v, want an Invalid error", err)
	}
}

func TestShutdownCutsConnectionsThatOutlastIt(t *testing.T) {
	s, err := mail.NewServer(mail.Config{Domain: domain, Logger: slog.New(slog.DiscardHandler)}, newBoxes("support"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	idle := dial(t, s.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown with an idle client: %v, want the context's deadline", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if err := idle.Noop(); err == nil {
		t.Fatal("the idle connection still answers after Shutdown")
	}
}
