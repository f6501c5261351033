package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/mail/mailtest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// inboxAPI is an agent with an inbox: its API, the SMTP listener of its deployment, and the
// relay its answers go to.
type inboxAPI struct {
	chatAPI
	smtp  string
	relay *mailtest.Sink
	// address is the agent's email address.
	address string
}

// inboxSetup starts an agent whose model answers reply, the deployment's SMTP listener on
// loopback and a relay sink (none when relay is false), and a worker.
func inboxSetup(t *testing.T, relay bool, bot map[string]any) (inboxAPI, *providertest.Server) {
	t.Helper()
	var sink *mailtest.Sink
	var opts []option
	if relay {
		sink = mailtest.New(t, mailtest.Options{})
		opts = append(opts, withRelay(sink.URL()))
	}
	b, a, fake := agentSetup(t, bot, opts...)
	srv, err := b.app.SMTP()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	in := inboxAPI{chatAPI: a, smtp: ln.Addr().String(), relay: sink}
	in.address = in.get(t, "/v1/bot/email/address", "")["email_address"].(string)
	return in, fake
}

// get calls the agent's route path with the query extra and returns its 200 answer.
func (a inboxAPI) get(t *testing.T, path, extra string) map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: path + "?" + a.query(extra), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)
}

// send delivers a message over SMTP to the listener, as a mail server does, with net/smtp.
func (a inboxAPI) send(t *testing.T, from, to string, header map[string]string, body string) error {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\n", from, to)
	for k, v := range header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n")
	b.WriteString(strings.ReplaceAll(body, "\n", "\r\n"))
	envelope, err := mail.ParseAddress(from)
	if err != nil {
		t.Fatal(err)
	}
	return smtp.SendMail(a.smtp, nil, envelope.Address, []string{to}, []byte(b.String()))
}

// emails lists the agent's emails, newest first.
func (a inboxAPI) emails(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range a.get(t, "/v1/bot/email/readall", "&per_page=100")["emails"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// inbound waits for the email of message id mid, received, to reach a status other than those
// it passes through (received, pending), and returns it.
func (a inboxAPI) inbound(t *testing.T, mid string) map[string]any {
	t.Helper()
	var found map[string]any
	waitFor(t, "the email <"+mid+"> handled", func() (bool, any) {
		for _, e := range a.emails(t) {
			if e["message_id"] == mid && e["direction"] == "inbound" {
				found = e
				return e["status"] != "received" && e["status"] != "pending", e
			}
		}
		return false, a.emails(t)
	})
	return found
}

// smtpCode is the SMTP reply code of err (0 when it carries none).
func smtpCode(err error) int {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// Mail to an agent's address over SMTP is answered through the relay, threaded under it; a
// reply in the thread lands in the same chat, with only its new part put to the agent; a
// retried delivery is kept once; an auto-reply is filed, unanswered; unknown addresses are
// refused at RCPT and oversized messages at DATA.
func TestEmailConversation(t *testing.T) {
	t.Parallel()
	a, fake := inboxSetup(t, true, map[string]any{"name": "Helper", "reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Reply: "We open at **nine**."})
	if !strings.HasSuffix(a.address, "@"+testMailDomain) {
		t.Fatalf("the agent's address is %q", a.address)
	}
	alice := "Alice <alice@example.com>"
	if err := a.send(t, alice, a.address, map[string]string{"Subject": "Opening hours", "Message-ID": "<m1@example.com>"},
		"When do you open?"); err != nil {
		t.Fatal(err)
	}
	first := a.relay.Wait(t, 1)
	if got := first.Header.Get("In-Reply-To"); got != "<m1@example.com>" {
		t.Fatalf("the answer's In-Reply-To is %q", got)
	}
	if first.Header.Get("Auto-Submitted") != "auto-replied" || first.Subject() != "Re: Opening hours" ||
		!strings.Contains(first.Text, "We open at **nine**.") || !strings.Contains(first.HTML, "<strong>nine</strong>") ||
		len(first.To) != 1 || first.To[0] != "alice@example.com" {
		t.Fatalf("the answer: to %v, subject %q, Auto-Submitted %q, text %q, html %q", first.To, first.Subject(),
			first.Header.Get("Auto-Submitted"), first.Text, first.HTML)
	}
	one := a.inbound(t, "m1@example.com")
	if one["status"] != "answered" || one["chat_id"] == "" || one["from_address"] != "alice@example.com" || strings.TrimSpace(one["text_body"].(string)) != "When do you open?" {
		t.Fatalf("the first email: %v", one)
	}

	t.Run("ThreadedReplySameChat", func(t *testing.T) {
		answerID := first.Header.Get("Message-Id")
		fake.Set(providertest.Behavior{Reply: "You are welcome."})
		body := "Thanks, and on Sundays?\n\nOn Monday, Helper <" + a.address + "> wrote:\n> We open at nine."
		hdr := map[string]string{"Subject": "Re: Opening hours", "Message-ID": "<m2@example.com>", "In-Reply-To": answerID, "References": "<m1@example.com> " + answerID}
		if err := a.send(t, alice, a.address, hdr, body); err != nil {
			t.Fatal(err)
		}
		second := a.relay.Wait(t, 2)
		if second.Header.Get("In-Reply-To") != "<m2@example.com>" || !strings.Contains(second.Header.Get("References"), "<m1@example.com>") {
			t.Fatalf("the second answer's threading: In-Reply-To %q, References %q", second.Header.Get("In-Reply-To"), second.Header.Get("References"))
		}
		two := a.inbound(t, "m2@example.com")
		if two["chat_id"] != one["chat_id"] {
			t.Fatalf("the reply went to chat %v, the thread is chat %v", two["chat_id"], one["chat_id"])
		}
		reqs := fake.Requests()
		msgs := reqs[len(reqs)-1].Messages
		last := msgs[len(msgs)-1].Content
		if !strings.Contains(last, "Thanks, and on Sundays?") || strings.Contains(last, "We open at nine.") {
			t.Fatalf("the agent was asked %q", last)
		}
		// The same message delivered again (a sender's retry) is kept once.
		if err := a.send(t, alice, a.address, hdr, body); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("AutoReplyFiled", func(t *testing.T) {
		hdr := map[string]string{"Subject": "Out of office", "Message-ID": "<ooo@example.com>", "Auto-Submitted": "auto-replied"}
		if err := a.send(t, alice, a.address, hdr, "I am away until Monday."); err != nil {
			t.Fatal(err)
		}
		ooo := a.inbound(t, "ooo@example.com")
		if ooo["status"] != "filed" || ooo["note"] == "" || ooo["automatic"] != true {
			t.Fatalf("the auto-reply: %v", ooo)
		}
		// Handled after the retry above: neither it nor the auto-reply was answered.
		if n := len(a.relay.Messages()); n != 2 {
			t.Fatalf("the relay took %d answers, want 2", n)
		}
		kept := 0
		for _, e := range a.emails(t) {
			if e["message_id"] == "m2@example.com" {
				kept++
			}
		}
		if kept != 1 {
			t.Fatalf("the retried message is kept %d times", kept)
		}
		stats := a.get(t, "/v1/bot/email/stats", "")["stats"].(map[string]any)
		if stats["total_received"] != float64(3) || stats["answered_automatically"] != float64(2) || stats["total_replied"] != float64(2) ||
			stats["failed"] != float64(0) || stats["median_answer_seconds"] == nil || stats["last_received_at"] == nil {
			t.Fatalf("stats %v", stats)
		}
	})

	t.Run("UnknownAddressRefusedAtRCPT", func(t *testing.T) {
		err := a.send(t, alice, "nobody@"+testMailDomain, map[string]string{"Subject": "Hi"}, "Anyone?")
		if smtpCode(err) != 550 {
			t.Fatalf("mail to an unknown address: %v", err)
		}
		err = a.send(t, alice, "someone@elsewhere.test", map[string]string{"Subject": "Hi"}, "Anyone?")
		if code := smtpCode(err); code < 500 {
			t.Fatalf("mail to another domain: %v", err)
		}
	})

	t.Run("OversizedRefusedAtDATA", func(t *testing.T) {
		err := a.send(t, alice, a.address, map[string]string{"Subject": "Big"}, strings.Repeat("0123456789abcdef\n", 700_000))
		if smtpCode(err) != 552 {
			t.Fatalf("an oversized message: %v", err)
		}
	})
}
