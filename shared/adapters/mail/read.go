package mail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"

	gomessage "github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // the charsets of mail in the wild
	gomail "github.com/emersion/go-message/mail"
	"github.com/microcosm-cc/bluemonday"

	"github.com/agentplane/agentplane/shared/email"
	"github.com/agentplane/agentplane/shared/memory/text"
)

// readMessage reads a message as received: its header fields, its text and HTML (the first
// inline text/plain and text/html parts, each decoded to UTF-8, the HTML sanitised) and its
// attachments (their data kept up to maxAttachment bytes each). EnvelopeFrom and Recipients
// are the SMTP session's to fill.
func readMessage(raw []byte, maxAttachment int) (email.Inbound, error) {
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil && !gomessage.IsUnknownCharset(err) {
		return email.Inbound{}, fmt.Errorf("header: %w", err)
	}
	in := readHeader(r.Header)
	in.Size = len(raw)
	var htmlBody string
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !gomessage.IsUnknownCharset(err) && !gomessage.IsUnknownEncoding(err) {
			return email.Inbound{}, fmt.Errorf("body: %w", err)
		}
		if err := readPart(&in, &htmlBody, p, maxAttachment); err != nil {
			return email.Inbound{}, err
		}
	}
	if htmlBody != "" {
		in.HTML = sanitize(htmlBody)
		if strings.TrimSpace(in.Text) == "" {
			page, err := text.ExtractHTML([]byte(htmlBody), "text/html; charset=utf-8", nil)
			if err != nil {
				return email.Inbound{}, fmt.Errorf("html part: %w", err)
			}
			in.Text = page.Text
		}
	}
	return in, nil
}

// readHeader reads the header fields of Inbound; a field that does not parse is left empty
// (mail in the wild has broken headers that must not cost the whole message).
func readHeader(h gomail.Header) email.Inbound {
	in := email.Inbound{
		To:                    addresses(h, "To"),
		Cc:                    addresses(h, "Cc"),
		ReplyTo:               addresses(h, "Reply-To"),
		AuthenticationResults: h.Get("Authentication-Results"),
		Automatic:             automatic(h),
	}
	if from := addresses(h, "From"); len(from) > 0 {
		in.From = from[0]
	}
	in.Subject, _ = h.Subject()
	in.MessageID, _ = h.MessageID()
	if ids, _ := h.MsgIDList("In-Reply-To"); len(ids) > 0 {
		in.InReplyTo = ids[0]
	}
	in.References, _ = h.MsgIDList("References")
	in.Date, _ = h.Date()
	return in
}

// addresses are the mailboxes of the address list field key.
func addresses(h gomail.Header, key string) []email.Address {
	list, _ := h.AddressList(key)
	out := make([]email.Address, 0, len(list))
	for _, a := range list {
		out = append(out, email.Address{Name: a.Name, Address: a.Address})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// automatic reports whether the header marks a message a machine sent: Auto-Submitted other
// than no (RFC 3834), Precedence bulk, junk or list, a List-Id, or a From of mailer-daemon or
// postmaster. (A null envelope sender, the other mark, is the session's to see.)
func automatic(h gomail.Header) bool {
	if v := fieldToken(h.Get("Auto-Submitted")); v != "" && v != "no" {
		return true
	}
	switch fieldToken(h.Get("Precedence")) {
	case "bulk", "junk", "list":
		return true
	}
	if h.Has("List-Id") {
		return true
	}
	if from, _ := h.AddressList("From"); len(from) > 0 {
		local, _, _ := strings.Cut(strings.ToLower(from[0].Address), "@")
		return local == "mailer-daemon" || local == "postmaster"
	}
	return false
}

// fieldToken is a structured field's value without its parameters, lowercased.
func fieldToken(v string) string {
	v, _, _ = strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(v))
}

// readPart files one leaf part: the first inline text/plain is the text, the first inline
// text/html the HTML, everything else an attachment (an inline text part with a file name, as
// Apple Mail sends a text file, too).
func readPart(in *email.Inbound, htmlBody *string, p *gomail.Part, maxAttachment int) error {
	if h, ok := p.Header.(*gomail.InlineHeader); ok {
		t, params, _ := h.ContentType()
		_, dparams, _ := h.ContentDisposition()
		named := params["name"] != "" || dparams["filename"] != ""
		switch {
		case t == "text/plain" && in.Text == "" && !named:
			b, err := io.ReadAll(p.Body)
			in.Text = string(b)
			return partErr("text/plain", err)
		case t == "text/html" && *htmlBody == "" && !named:
			b, err := io.ReadAll(p.Body)
			*htmlBody = string(b)
			return partErr("text/html", err)
		}
	}
	a, err := readAttachment(p, maxAttachment)
	if err != nil {
		return err
	}
	in.Attachments = append(in.Attachments, a)
	return nil
}

// readAttachment reads a part as an attachment, its data kept up to max bytes.
func readAttachment(p *gomail.Part, max int) (email.Attachment, error) {
	h := gomail.AttachmentHeader{Header: headerOf(p)}
	t, params, _ := h.ContentType()
	name, _ := h.Filename()
	if name == "" {
		name = decodeWord(params["name"])
	}
	data, err := io.ReadAll(io.LimitReader(p.Body, int64(max)+1))
	if err != nil {
		return email.Attachment{}, partErr(t, err)
	}
	a := email.Attachment{Filename: name, ContentType: t, Size: len(data), Data: data}
	if len(data) > max {
		rest, err := io.Copy(io.Discard, p.Body)
		if err != nil {
			return email.Attachment{}, partErr(t, err)
		}
		a.Size += int(rest)
		a.Data = nil
	}
	return a, nil
}

// headerOf is a part's header, whichever kind go-message made it.
func headerOf(p *gomail.Part) gomessage.Header {
	switch h := p.Header.(type) {
	case *gomail.InlineHeader:
		return h.Header
	case *gomail.AttachmentHeader:
		return h.Header
	}
	return gomessage.Header{}
}

// decodeWord decodes an RFC 2047 encoded word; s as it is when it is none.
func decodeWord(s string) string {
	dec := mime.WordDecoder{CharsetReader: gomessage.CharsetReader}
	if d, err := dec.DecodeHeader(s); err == nil {
		return d
	}
	return s
}

// partErr names the part whose body could not be decoded.
func partErr(contentType string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s part: %w", contentType, err)
}

// policy is the sanitiser of HTML bodies: bluemonday's policy for user content (no scripts,
// styles or event handlers) with the sources of images emptied, so that showing a message
// loads nothing from elsewhere (no tracking pixels).
var policy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.RewriteSrc(func(u *url.URL) { *u = url.URL{} })
	return p
}()

// sanitize is body without what could run or load anything.
func sanitize(body string) string {
	return policy.Sanitize(body)
}
