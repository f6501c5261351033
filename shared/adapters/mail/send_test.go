package mail_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/mail"
	"github.com/agentplane/agentplane/shared/adapters/mail/mailtest"
	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// answer is an agent's answer in a thread of two earlier messages.
func answer() email.Outgoing {
	return email.Outgoing{
		From:       email.Address{Name: "Support Agent", Address: "support@mail.example.com"},
		To:         []email.Address{{Name: "Zoë Müller", Address: "zoe@example.org"}},
		Subject:    "Re: Über die Rechnung",
		Text:       "Hello Zoë,\n\nthe invoice is paid. A line long enough that quoted-printable has to wrap it somewhere along the way.\n",
		HTML:       "<p>Hello Zoë,</p><p>the invoice is <b>paid</b>.</p>",
		MessageID:  mail.NewMessageID("mail.example.com"),
		InReplyTo:  "prev-2@example.org",
		References: []string{"first-1@example.org", "prev-2@example.org"},
		Header:     map[string]string{"Auto-Submitted": "auto-replied"},
	}
}

func relay(t *testing.T, sink *mailtest.Sink) *mail.Relay {
	t.Helper()
	r, err := mail.NewRelay(sink.URL(), mail.WithTLSConfig(sink.ClientTLS()), mail.WithHelo("mail.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRelaySendsOverStartTLSWithAuth(t *testing.T) {
	sink := mailtest.New(t, mailtest.Options{TLS: true, User: "agent", Password: "s3cret"})
	m := answer()
	if err := relay(t, sink).Send(t.Context(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	got := sink.Wait(t, 1)
	if got.Helo != "mail.example.com" {
		t.Errorf("the relay was greeted as %q, want mail.example.com", got.Helo)
	}
	if !got.TLS || got.User != "agent" {
		t.Errorf("TLS %v, user %q: want the message over STARTTLS from the authenticated agent", got.TLS, got.User)
	}
	if got.From != "support@mail.example.com" || strings.Join(got.To, ",") != "zoe@example.org" {
		t.Errorf("envelope %q -> %v", got.From, got.To)
	}
	for field, want := range map[string]string{
		"Message-Id":     "<" + m.MessageID + ">",
		"In-Reply-To":    "<prev-2@example.org>",
		"References":     "<first-1@example.org> <prev-2@example.org>",
		"Auto-Submitted": "auto-replied",
		"Mime-Version":   "1.0",
	} {
		if v := got.Header.Get(field); v != want {
			t.Errorf("%s = %q, want %q", field, v, want)
		}
	}
	if got.Subject() != m.Subject {
		t.Errorf("subject = %q, want %q", got.Subject(), m.Subject)
	}
	if raw := string(got.Raw); strings.Contains(raw, "Über") || !strings.Contains(raw, "=?utf-8?") {
		t.Errorf("the subject is not encoded in the raw message:\n%s", raw)
	}
	if from, _ := got.Header.AddressList("From"); len(from) != 1 || from[0].Name != "Support Agent" {
		t.Errorf("From = %v", from)
	}
	if to, _ := got.Header.AddressList("To"); len(to) != 1 || to[0].Name != "Zoë Müller" {
		t.Errorf("To = %v", to)
	}
	if d, err := got.Header.Date(); err != nil || time.Since(d) > time.Minute {
		t.Errorf("Date = %v (%v), want now", d, err)
	}
	if ct, _, _ := got.Header.ContentType(); ct != "multipart/alternative" {
		t.Errorf("Content-Type = %q", ct)
	}
	if got.Text != m.Text || got.HTML != m.HTML {
		t.Errorf("text %q html %q, want %q and %q", got.Text, got.HTML, m.Text, m.HTML)
	}
	if !strings.Contains(string(got.Raw), "quoted-printable") {
		t.Errorf("the parts are not quoted-printable:\n%s", got.Raw)
	}
}

func TestRelayWithoutUserSendsWithoutAuth(t *testing.T) {
	sink := mailtest.New(t, mailtest.Options{})
	if err := relay(t, sink).Send(t.Context(), answer()); err != nil {
		t.Fatalf("send: %v", err)
	}
	if got := sink.Wait(t, 1); got.TLS || got.User != "" {
		t.Errorf("TLS %v user %q, want a plain unauthenticated message", got.TLS, got.User)
	}
}

func TestRelaySendsOverImplicitTLS(t *testing.T) {
	sink := mailtest.New(t, mailtest.Options{ImplicitTLS: true, User: "agent", Password: "s3cret"})
	m := answer()
	m.MessageID = ""
	if err := relay(t, sink).Send(t.Context(), m); err != nil {
		t.Fatalf("send: %v", err)
	}
	got := sink.Wait(t, 1)
	if !got.TLS || got.User != "agent" {
		t.Errorf("TLS %v, user %q: want the message over TLS from the authenticated agent", got.TLS, got.User)
	}
	if id, _ := got.Header.MessageID(); !strings.HasSuffix(id, "@mail.example.com") {
		t.Errorf("Message-ID = %q, want a new one at the sender's domain", id)
	}
}

func TestRelayRefusesAnUntrustedCertificate(t *testing.T) {
	sink := mailtest.New(t, mailtest.Options{TLS: true, User: "agent", Password: "s3cret"})
	r, err := mail.NewRelay(sink.URL())
	if err != nil {
		t.Fatal(err)
	}
	err = r.Send(t.Context(), answer())
	if e := apperr.As(err); e.Kind != apperr.BadGateway || e.Code != "relay_tls_refused" {
		t.Fatalf("send to a relay with a self-signed certificate: %v, want relay_tls_refused", err)
	}
}

func TestRelayErrors(t *testing.T) {
	t.Run("4xxIsTemporary", func(t *testing.T) {
		sink := mailtest.New(t, mailtest.Options{})
		sink.FailNext(1, 451)
		err := relay(t, sink).Send(t.Context(), answer())
		if e := apperr.As(err); e.Kind != apperr.Unavailable || !strings.Contains(err.Error(), "451") {
			t.Fatalf("send: %v, want an Unavailable error with the relay's 451", err)
		}
		if err := relay(t, sink).Send(t.Context(), answer()); err != nil {
			t.Fatalf("the retry: %v", err)
		}
		sink.Wait(t, 1)
	})
	t.Run("5xxIsPermanent", func(t *testing.T) {
		sink := mailtest.New(t, mailtest.Options{})
		sink.FailNext(1, 554)
		err := relay(t, sink).Send(t.Context(), answer())
		e := apperr.As(err)
		if e.Kind == apperr.Unavailable || e.Kind == apperr.Internal || !strings.Contains(e.Message, "554") || !strings.Contains(e.Message, "mailtest refuses this message") {
			t.Fatalf("send: %v (kind %s), want a permanent error with the relay's text", err, e.Kind)
		}
	})
	t.Run("WrongPasswordIsPermanent", func(t *testing.T) {
		sink := mailtest.New(t, mailtest.Options{TLS: true, User: "agent", Password: "s3cret"})
		r, err := mail.NewRelay("smtp://agent:wrong@"+sink.Addr(), mail.WithTLSConfig(sink.ClientTLS()))
		if err != nil {
			t.Fatal(err)
		}
		err = r.Send(t.Context(), answer())
		if e := apperr.As(err); e.Code != "relay_auth_refused" {
			t.Fatalf("send: %v, want relay_auth_refused", err)
		}
	})
	t.Run("RelayDownIsTemporary", func(t *testing.T) {
		sink := mailtest.New(t, mailtest.Options{})
		r := relay(t, sink)
		sink.Stop()
		err := r.Send(t.Context(), answer())
		if e := apperr.As(err); e.Kind != apperr.Unavailable {
			t.Fatalf("send to a stopped relay: %v, want Unavailable", err)
		}
		sink.Start()
		if err := r.Send(t.Context(), answer()); err != nil {
			t.Fatalf("send once the relay is back: %v", err)
		}
		sink.Wait(t, 1)
	})
}

func TestRelayHonoursTheContextDeadline(t *testing.T) {
	// A relay that takes the connection and never greets.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	r, err := mail.NewRelay("smtp://" + l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Send(ctx, answer()) }()
	select {
	case err := <-done:
		if e := apperr.As(err); e.Kind != apperr.Unavailable || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("send: %v, want Unavailable after the deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send did not return after its context's deadline")
	}
}

func TestNewRelay(t *testing.T) {
	for _, bad := range []string{"http://relay.example.com", "smtp://", "::"} {
		if _, err := mail.NewRelay(bad); apperr.As(err).Kind != apperr.Invalid {
			t.Errorf("NewRelay(%q) = %v, want an Invalid error", bad, err)
		}
	}
	sink := mailtest.New(t, mailtest.Options{})
	r, err := mail.NewRelay("smtp://" + sink.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Send(t.Context(), email.Outgoing{From: answer().From, Subject: "x"}); apperr.As(err).Kind != apperr.Invalid {
		t.Errorf("a message without recipients: %v, want an Invalid error", err)
	}
	m := answer()
	m.Header = map[string]string{"X-Evil": "a\r\nBcc: victim@example.org"}
	if err := r.Send(t.Context(), m); apperr.As(err).Kind != apperr.Invalid {
		t.Errorf("a header with a line break: %v, want an Invalid error", err)
	}
}

func TestNewMessageID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := mail.NewMessageID("mail.example.com")
		if !strings.HasSuffix(id, "@mail.example.com") || strings.ContainsAny(id, "<> ") {
			t.Fatalf("id %q", id)
		}
		if seen[id] {
			t.Fatalf("id %q came twice", id)
		}
		seen[id] = true
	}
}
