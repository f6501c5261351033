package api_test

import (
	"encoding/json"
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

// waitEmail waits until the inbound email of message id mid satisfies ok, and returns it.
func (a inboxAPI) waitEmail(t *testing.T, mid, what string, ok func(e map[string]any) bool) map[string]any {
	t.Helper()
	var found map[string]any
	waitFor(t, what, func() (bool, any) {
		for _, e := range a.emails(t) {
			if e["message_id"] == mid && e["direction"] == "inbound" && ok(e) {
				found = e
				return true, e
			}
		}
		return false, a.emails(t)
	})
	return found
}

// A relay that is down delays the answer, the failed attempt showing on the email, and loses
// nothing: the answer arrives once it is back. One that refuses an answer for good fails it. A
// sender answered max_answers_per_hour times in the hour is not answered again.
func TestEmailRelay(t *testing.T) {
	t.Parallel()
	a, fake := inboxSetup(t, true, map[string]any{"reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Reply: "Noted."})
	bob := "bob@example.com"

	a.relay.Stop()
	if err := a.send(t, bob, a.address, map[string]string{"Subject": "Down", "Message-ID": "<down@example.com>"}, "Is the relay up?"); err != nil {
		t.Fatal(err)
	}
	a.waitEmail(t, "down@example.com", "the failed attempt shown", func(e map[string]any) bool {
		return e["status"] == "pending" && e["error"] != nil && e["error"] != ""
	})
	a.relay.Start()
	if got := a.relay.Wait(t, 1); got.Header.Get("In-Reply-To") != "<down@example.com>" {
		t.Fatalf("the delayed answer %v", got.Header)
	}
	down := a.waitEmail(t, "down@example.com", "the answer sent", func(e map[string]any) bool { return e["status"] == "answered" })
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Key: a.b.key, Path: "/v1/bot/email/read?" + a.query("&email_id="+down["reply_id"].(string))})
	expect(t, res, http.StatusOK, "")
	if sent := res.JSON(t)["email"].(map[string]any); sent["status"] != "sent" || sent["attempts"].(float64) < 2 || sent["direction"] != "outbound" {
		t.Fatalf("the answer %v", sent)
	}

	a.relay.FailNext(1, 554)
	if err := a.send(t, bob, a.address, map[string]string{"Subject": "Refused", "Message-ID": "<refused@example.com>"}, "And now?"); err != nil {
		t.Fatal(err)
	}
	refused := a.inbound(t, "refused@example.com")
	if refused["status"] != "failed" || !strings.Contains(refused["error"].(string), "554") {
		t.Fatalf("the refused answer's email %v", refused)
	}

	res = a.b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/email/settings", Key: a.b.key,
		Body: a.body(map[string]any{"max_answers_per_hour": 2})})
	expect(t, res, http.StatusOK, "")
	if err := a.send(t, bob, a.address, map[string]string{"Subject": "Third", "Message-ID": "<third@example.com>"}, "Once more?"); err != nil {
		t.Fatal(err)
	}
	third := a.inbound(t, "third@example.com")
	if third["status"] != "filed" || !strings.Contains(third["note"].(string), "max_answers_per_hour") {
		t.Fatalf("the sender's third message in the hour %v", third)
	}
	stats := a.get(t, "/v1/bot/email/stats", "")["stats"].(map[string]any)
	if stats["total_received"] != float64(3) || stats["answered_automatically"] != float64(1) || stats["failed"] != float64(1) {
		t.Fatalf("stats %v", stats)
	}
}

// In reply_mode draft the agent's answer waits for a person, who sends it as it is or writes
// their own; without a relay, answers are kept unsent.
func TestEmailDraftsAndPeople(t *testing.T) {
	t.Parallel()
	t.Run("Draft", func(t *testing.T) {
		t.Parallel()
		a, fake := inboxSetup(t, true, map[string]any{"reasoning_type": "standard"})
		fake.Set(providertest.Behavior{Reply: "A draft answer."})
		res := a.b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/email/settings", Key: a.b.key,
			Body: a.body(map[string]any{"reply_mode": "draft", "signature": "The shop"})})
		expect(t, res, http.StatusOK, "")
		if st := res.JSON(t)["settings"].(map[string]any); st["reply_mode"] != "draft" || st["auto_reply"] != false {
			t.Fatalf("settings %v", st)
		}
		if err := a.send(t, "carol@example.com", a.address, map[string]string{"Subject": "Prices", "Message-ID": "<d1@example.com>"}, "How much?"); err != nil {
			t.Fatal(err)
		}
		d1 := a.inbound(t, "d1@example.com")
		if d1["status"] != "draft" || len(a.relay.Messages()) != 0 {
			t.Fatalf("the drafted email %v; sent %d", d1, len(a.relay.Messages()))
		}
		reply := func(content any) map[string]any {
			res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/email/reply", Key: a.b.key,
				Body: a.body(map[string]any{"email_id": d1["uuid"], "content": content})})
			expect(t, res, http.StatusOK, "")
			return res.JSON(t)["email"].(map[string]any)
		}
		if sent := reply(nil); sent["status"] != "sent" || sent["by"] != "agent" {
			t.Fatalf("the approved draft %v", sent)
		}
		if m := a.relay.Wait(t, 1); !strings.Contains(m.Text, "A draft answer.") || !strings.Contains(m.Text, "The shop") {
			t.Fatalf("the approved draft as sent: %q", m.Text)
		}
		if sent := reply("A person adds: 10% off today."); sent["status"] != "sent" || sent["by"] != "person" {
			t.Fatalf("the person's answer %v", sent)
		}
		m := a.relay.Wait(t, 2)
		if !strings.Contains(m.Text, "10% off today") || m.Header.Get("Auto-Submitted") != "" || m.Header.Get("In-Reply-To") != "<d1@example.com>" {
			t.Fatalf("the person's answer as sent: %q %v", m.Text, m.Header)
		}
		stats := a.get(t, "/v1/bot/email/stats", "")["stats"].(map[string]any)
		if stats["answered_automatically"] != float64(1) || stats["answered_by_people"] != float64(1) || stats["total_unread"] != float64(0) {
			t.Fatalf("stats %v", stats)
		}
		res = a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/email/reply", Key: a.b.key,
			Body: a.body(map[string]any{"email_id": d1["reply_id"], "content": "to myself"})})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	})
	t.Run("NoRelayKeepsAnswersUnsent", func(t *testing.T) {
		t.Parallel()
		a, fake := inboxSetup(t, false, map[string]any{"reasoning_type": "standard"})
		fake.Set(providertest.Behavior{Reply: "Unsent answer."})
		if err := a.send(t, "dan@example.com", a.address, map[string]string{"Subject": "Hello", "Message-ID": "<u1@example.com>"}, "Hi"); err != nil {
			t.Fatal(err)
		}
		u1 := a.inbound(t, "u1@example.com")
		if u1["status"] != "unsent" || !strings.Contains(u1["error"].(string), "AGENTPLANE_SMTP_RELAY") {
			t.Fatalf("the email %v", u1)
		}
	})
	t.Run("TakenChatsAreThePersons", func(t *testing.T) {
		t.Parallel()
		a, fake := inboxSetup(t, true, map[string]any{"reasoning_type": "standard"})
		fake.Set(providertest.Behavior{Reply: "The agent answers."})
		if err := a.send(t, "erin@example.com", a.address, map[string]string{"Subject": "Refund", "Message-ID": "<t1@example.com>"}, "I want a refund."); err != nil {
			t.Fatal(err)
		}
		first := a.relay.Wait(t, 1)
		chatID := a.inbound(t, "t1@example.com")["chat_id"].(string)
		_, token := a.operator(t, "Maria")
		expect(t, a.inbox(t, token, "take", chatID, nil), http.StatusOK, "")
		hdr := map[string]string{"Subject": "Re: Refund", "Message-ID": "<t2@example.com>", "In-Reply-To": first.Header.Get("Message-Id")}
		if err := a.send(t, "erin@example.com", a.address, hdr, "Hello?"); err != nil {
			t.Fatal(err)
		}
		if t2 := a.inbound(t, "t2@example.com"); t2["status"] != "filed" || t2["chat_id"] != chatID {
			t.Fatalf("a message to a taken chat %v", t2)
		}
		expect(t, a.inbox(t, token, "reply", chatID, map[string]any{"content": "Maria here: refund approved."}), http.StatusOK, "")
		m := a.relay.Wait(t, 2)
		if !strings.Contains(m.Text, "refund approved") || m.Header.Get("In-Reply-To") != "<t2@example.com>" || m.To[0] != "erin@example.com" {
			t.Fatalf("the operator's reply as sent: %q %v", m.Text, m.Header)
		}
	})
}

// An agent's address is its own across the deployment: another account's agent cannot take
// it, and addresses are checked as local parts.
func TestEmailAddressIsOneAgents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine := b.chatBot(t, map[string]any{"name": "Mine"})
	res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/email/settings", Key: b.key,
		Body: mine.body(map[string]any{"address": "Support@" + testMailDomain})})
	expect(t, res, http.StatusOK, "")
	if got := res.JSON(t)["email_address"]; got != "support@"+testMailDomain {
		t.Fatalf("the address is %v", got)
	}
	key, project := b.newTenant(t)
	res = b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/create", Key: key,
		Body: map[string]any{"project_id": project.ID, "name": "Theirs", "model": "gpt-4o-mini"}})
	expect(t, res, http.StatusOK, "")
	theirs := res.JSON(t)["bot"].(map[string]any)["id"]
	for _, c := range []struct {
		address string
		status  int
		code    string
	}{
		{"support", http.StatusConflict, "email_address_taken"},
		{"postmaster", http.StatusUnprocessableEntity, "invalid_field"},
		{"two..dots", http.StatusUnprocessableEntity, "invalid_field"},
		{"sp ace", http.StatusUnprocessableEntity, "invalid_field"},
		{"help-desk", http.StatusOK, ""},
	} {
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/email/settings", Key: key,
			Body: map[string]any{"project_id": project.ID, "bot_id": theirs, "address": c.address}})
		expect(t, res, c.status, c.code)
	}
	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/email/address?" + mine.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if got := res.JSON(t)["email_address"]; got != "support@"+testMailDomain {
		t.Fatalf("my address became %v", got)
	}
}

// BoostGPT's client's seven email calls, with the one body it keeps mutating, answer in the
// shapes it reads.
func TestEmailBoostGPTClient(t *testing.T) {
	t.Parallel()
	a, fake := inboxSetup(t, true, map[string]any{"reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Reply: "Thanks for writing."})
	c := &boostClient{t: t, b: a.b, body: map[string]any{"project_id": a.b.project.ID}}
	p := a.b.project.ID

	addr := c.call("GET", "/v1/bot/email/address", nil, "project_id", p, "bot_id", a.botID)
	if addr["email_address"] != a.address || addr["enabled"] != true {
		t.Fatalf("address %v", addr)
	}
	st := c.call("PUT", "/v1/bot/email/settings", map[string]any{"bot_id": a.botID, "auto_reply": true, "signature": "Best, Support", "filter_spam": true})
	if s := st["settings"].(map[string]any); s["auto_reply"] != true || s["signature"] != "Best, Support" || s["filter_spam"] != true {
		t.Fatalf("settings %v", st)
	}
	if err := a.send(t, "fay@example.com", a.address, map[string]string{"Subject": "Question", "Message-ID": "<q1@example.com>",
		"Authentication-Results": "mx.example.com; spf=pass; dkim=pass"}, "Do you ship abroad?"); err != nil {
		t.Fatal(err)
	}
	if m := a.relay.Wait(t, 1); !strings.Contains(m.Text, "Best, Support") {
		t.Fatalf("the answer %q has no signature", m.Text)
	}
	a.inbound(t, "q1@example.com")
	stats := c.call("GET", "/v1/bot/email/stats", nil, "project_id", p, "bot_id", a.botID)["stats"].(map[string]any)
	if stats["total_received"] != float64(1) || stats["total_replied"] != float64(1) || stats["total_unread"] != float64(0) {
		t.Fatalf("stats %v", stats)
	}
	list := c.call("GET", "/v1/bot/email/readall", nil, "project_id", p, "bot_id", a.botID, "page", "1", "per_page", "10")
	emails := list["emails"].([]any)
	if list["total"] != float64(2) || len(emails) != 2 || list["pagination"].(map[string]any)["per_page"] != float64(10) {
		t.Fatalf("readall %v", list)
	}
	var inbound map[string]any
	for _, e := range emails {
		if e := e.(map[string]any); e["direction"] == "inbound" {
			inbound = e
		}
	}
	if inbound == nil || inbound["from_address"] != "fay@example.com" || inbound["to_address"] != a.address || inbound["subject"] != "Question" ||
		inbound["status"] != "answered" || inbound["uuid"] == "" || inbound["created_at"] == "" {
		t.Fatalf("the inbound email as listed %v", inbound)
	}
	id := inbound["uuid"].(string)
	read := c.call("GET", "/v1/bot/email/read", nil, "project_id", p, "bot_id", a.botID, "email_id", id)["email"].(map[string]any)
	if read["uuid"] != id || !strings.Contains(read["text_body"].(string), "Do you ship abroad?") ||
		!strings.Contains(read["authentication_results"].(string), "spf=pass") {
		t.Fatalf("read %v", read)
	}
	sent := c.call("POST", "/v1/bot/email/reply", map[string]any{"bot_id": a.botID, "email_id": id, "content": "Yes, to the whole EU."})["email"].(map[string]any)
	if sent["status"] != "sent" || sent["direction"] != "outbound" || sent["to_address"] != "fay@example.com" {
		t.Fatalf("reply %v", sent)
	}
	if m := a.relay.Wait(t, 2); !strings.Contains(m.Text, "whole EU") {
		t.Fatalf("the reply as sent %q", m.Text)
	}
	c.call("DELETE", "/v1/bot/email/delete", nil, "project_id", p, "bot_id", a.botID, "email_id", id)
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Key: a.b.key, Path: "/v1/bot/email/read?" + a.query("&email_id="+id)})
	expect(t, res, http.StatusNotFound, "email_not_found")
}

// email.received and email.replied trigger workflows, their data naming the sender, the subject
// and the thread's chat.
func TestEmailTriggersWorkflows(t *testing.T) {
	t.Parallel()
	a, fake := inboxSetup(t, true, map[string]any{"reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Reply: "Hello Gus."})
	hook := newReceiver(t)
	w := workflowAPI{a.chatAPI}
	for _, typ := range []string{"email.received", "email.replied"} {
		w.create(t, map[string]any{"trigger_type": "event", "trigger_event": typ, "actions": []any{map[string]any{"type": "webhook",
			"params": map[string]any{"url": hook.URL, "body": map[string]any{"kind": typ, "from": "{{data.from}}", "to": "{{data.to}}",
				"subject": "{{data.subject}}", "chat": "{{data.chat_id}}"}}}}})
	}
	if err := a.send(t, "gus@example.com", a.address, map[string]string{"Subject": "Hi there", "Message-ID": "<w1@example.com>"}, "Hi"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both workflows' webhooks", func() (bool, any) { return len(hook.got()) == 2, len(hook.got()) })
	chatID := a.inbound(t, "w1@example.com")["chat_id"]
	for _, d := range hook.got() {
		var body map[string]any
		if err := json.Unmarshal(d.body, &body); err != nil {
			t.Fatal(err)
		}
		switch body["kind"] {
		case "email.received":
			if body["from"] != "gus@example.com" || body["subject"] != "Hi there" {
				t.Fatalf("email.received's data %v", body)
			}
		case "email.replied":
			if body["to"] != "gus@example.com" || body["subject"] != "Re: Hi there" || body["chat"] != chatID {
				t.Fatalf("email.replied's data %v (the thread's chat is %v)", body, chatID)
			}
		default:
			t.Fatalf("a delivery of %v", body)
		}
	}
}

// An agent whose reasoning is a run answers mail when its run stops.
func TestEmailAgentRun(t *testing.T) {
	t.Parallel()
	a, fake := inboxSetup(t, true, map[string]any{"reasoning_type": "agent"})
	fake.Set(providertest.Behavior{Reply: "The run's answer."})
	if err := a.send(t, "hal@example.com", a.address, map[string]string{"Subject": "Run", "Message-ID": "<r1@example.com>"}, "Think it over."); err != nil {
		t.Fatal(err)
	}
	m := a.relay.Wait(t, 1)
	if !strings.Contains(m.Text, "The run's answer.") || m.Header.Get("In-Reply-To") != "<r1@example.com>" {
		t.Fatalf("the run's answer as sent: %q %v", m.Text, m.Header)
	}
	if r1 := a.inbound(t, "r1@example.com"); r1["status"] != "answered" || r1["chat_id"] == "" {
		t.Fatalf("the email %v", r1)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "The deal for Acme is created."}}})
	if err := a.send(t, "hal@example.com", a.address, map[string]string{"Subject": "Deal", "Message-ID": "<r2@example.com>"}, "Create a deal for Acme."); err != nil {
		t.Fatal(err)
	}
	var waiting map[string]any
	waitFor(t, "the email whose run waits for approval", func() (bool, any) {
		for _, e := range a.emails(t) {
			if e["message_id"] == "r2@example.com" {
				waiting = e
				return strings.Contains(fmt.Sprint(e["note"]), "waits for the approval"), e
			}
		}
		return false, nil
	})
	if waiting["status"] != "pending" {
		t.Fatalf("the email whose run waits: %v", waiting)
	}
	_, done := a.executeTool(t, map[string]any{"executionId": "em-" + waiting["uuid"].(string), "approve": true})
	if done == nil || done["isComplete"] != true {
		t.Fatalf("the approval: %v", done)
	}
	if m := a.relay.Wait(t, 2); !strings.Contains(m.Text, "The deal for Acme is created.") || m.Header.Get("In-Reply-To") != "<r2@example.com>" {
		t.Fatalf("the answer once approved, as sent: %q %v", m.Text, m.Header)
	}
	if r2 := a.inbound(t, "r2@example.com"); r2["status"] != "answered" {
		t.Fatalf("the email once approved: %v", r2)
	}
}
