package whatsapp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// signatureHeader carries the HMAC-SHA256 of a webhook call's body, keyed with the app secret,
// as "sha256=<hex>".
const signatureHeader = "X-Hub-Signature-256"

// Receive verifies and reads a call of Meta's webhook. A GET is the subscription handshake: when
// its hub.verify_token is the connection's, it is answered with its hub.challenge. A POST must
// carry the X-Hub-Signature-256 of its body; each text message to the connection's phone number
// is an Inbound (the number is the conversation and the user), each click on an approval button
// a Decision, a message the business number itself wrote (an echo of the WhatsApp Business
// app, or one from the number) is FromBot, and status updates (sent, delivered, read) bring
// nothing.
func (p *Platform) Receive(_ context.Context, l channels.Link, r channels.Request) (channels.Received, error) {
	switch r.Method {
	case http.MethodGet:
		return handshake(l, r)
	case http.MethodPost:
	default:
		return channels.Received{}, apperr.New(apperr.MethodNotAllowed, "method_not_allowed",
			"WhatsApp's webhook is called with GET (verification) or POST (notifications)")
	}
	if err := checkSignature(l.Credentials[CredAppSecret], r); err != nil {
		return channels.Received{}, err
	}
	var n notification
	if err := json.Unmarshal(r.Body, &n); err != nil {
		return channels.Received{}, apperr.Invalidf("body", "not a WhatsApp webhook notification: %v", err)
	}
	return channels.Received{Answer: channels.Answer{Status: http.StatusOK}, Messages: n.inbound(l.Credentials[CredPhoneNumberID])}, nil
}

// handshake answers Meta's verification request: hub.mode "subscribe", the verify token the
// user typed, and the challenge to echo.
func handshake(l channels.Link, r channels.Request) (channels.Received, error) {
	if r.Query.Get("hub.mode") != "subscribe" {
		return channels.Received{}, apperr.Invalidf("hub.mode", "must be subscribe")
	}
	want := l.Credentials[CredVerifyToken]
	if want == "" || subtle.ConstantTimeCompare([]byte(r.Query.Get("hub.verify_token")), []byte(want)) != 1 {
		return channels.Received{}, apperr.New(apperr.Unauthorized, "whatsapp_verify_token_mismatch",
			"The hub.verify_token is not this connection's verify token.")
	}
	return channels.Received{Answer: channels.Answer{
		Status:      http.StatusOK,
		ContentType: "text/plain; charset=utf-8",
		Body:        []byte(r.Query.Get("hub.challenge")),
	}}, nil
}

// checkSignature checks r's X-Hub-Signature-256 against its body signed with secret.
func checkSignature(secret string, r channels.Request) error {
	sig := r.Header.Get(signatureHeader)
	if sig == "" {
		return apperr.New(apperr.Unauthorized, "whatsapp_signature_missing",
			"The call carries no "+signatureHeader+": it is not WhatsApp's.")
	}
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	got, err := hex.DecodeString(hexSum)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(r.Body)
	if !ok || err != nil || secret == "" || !hmac.Equal(got, mac.Sum(nil)) {
		return apperr.New(apperr.Unauthorized, "whatsapp_signature_invalid",
			"The "+signatureHeader+" is not the body's signature with the app secret.")
	}
	return nil
}

// notification is a webhook call's body.
type notification struct {
	Object string `json:"object"`
	Entry  []struct {
		Changes []struct {
			Field string      `json:"field"`
			Value changeValue `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// changeValue is one change: messages (or the business app's echoes) to one phone number.
type changeValue struct {
	Metadata struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      string `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WaID string `json:"wa_id"`
	} `json:"contacts"`
	Messages      []inMessage `json:"messages"`
	MessageEchoes []inMessage `json:"message_echoes"`
}

// inMessage is a message of a notification.
type inMessage struct {
	From string `json:"from"`
	To   string `json:"to"`
	ID   string `json:"id"`
	Type string `json:"type"`
	Text struct {
		Body string `json:"body"`
	} `json:"text"`
	Interactive struct {
		Type        string `json:"type"`
		ButtonReply struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"button_reply"`
	} `json:"interactive"`
}

// inbound are the messages and clicks of n to the phone number phoneNumberID.
func (n notification) inbound(phoneNumberID string) []channels.Inbound {
	if n.Object != "whatsapp_business_account" {
		return nil
	}
	var out []channels.Inbound
	for _, entry := range n.Entry {
		for _, change := range entry.Changes {
			v := change.Value
			if v.Metadata.PhoneNumberID != phoneNumberID {
				continue
			}
			switch change.Field {
			case "messages":
				for _, m := range v.Messages {
					if in, ok := v.read(m); ok {
						out = append(out, in)
					}
				}
			case "smb_message_echoes":
				for _, m := range v.MessageEchoes {
					if m.Type == "text" {
						out = append(out, channels.Inbound{ID: m.ID, Conversation: m.To, User: m.From,
							Text: m.Text.Body, FromBot: true, Reply: channels.Target{"to": m.To}})
					}
				}
			}
		}
	}
	return out
}

// read is m as an Inbound: a text, or a click on an approval button; false for others (media,
// reactions, buttons not ours).
func (v changeValue) read(m inMessage) (channels.Inbound, bool) {
	in := channels.Inbound{
		ID:           m.ID,
		Conversation: m.From,
		User:         m.From,
		UserName:     v.name(m.From),
		FromBot:      sameNumber(m.From, v.Metadata.DisplayPhoneNumber),
		Reply:        channels.Target{"to": m.From},
	}
	switch {
	case m.Type == "text":
		in.Text = m.Text.Body
	case m.Type == "interactive" && m.Interactive.Type == "button_reply":
		d, ok := decision(m.Interactive.ButtonReply.ID)
		if !ok {
			return channels.Inbound{}, false
		}
		in.Decision = d
	default:
		return channels.Inbound{}, false
	}
	return in, true
}

// name is the profile name of the contact waID, when the notification names it.
func (v changeValue) name(waID string) string {
	for _, c := range v.Contacts {
		if c.WaID == waID {
			return c.Profile.Name
		}
	}
	return ""
}

// decision reads an approval button's id.
func decision(id string) (*channels.Decision, bool) {
	if exec, ok := strings.CutPrefix(id, approvePrefix); ok && exec != "" {
		return &channels.Decision{ExecutionID: exec, Approve: true}, true
	}
	if exec, ok := strings.CutPrefix(id, rejectPrefix); ok && exec != "" {
		return &channels.Decision{ExecutionID: exec}, true
	}
	return nil, false
}

// sameNumber reports whether two phone numbers are one, whatever their punctuation.
func sameNumber(a, b string) bool {
	digits := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, s)
	}
	return digits(a) != "" && digits(a) == digits(b)
}
