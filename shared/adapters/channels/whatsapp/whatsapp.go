// Package whatsapp is the WhatsApp Business Platform (Cloud API, Meta's Graph API) as a
// channels.Platform: its webhook calls verified (the GET handshake with the verify token, the
// X-Hub-Signature-256 of every POST) and read, messages sent through the phone number's
// /messages endpoint, approvals asked with interactive reply buttons. It speaks the documented
// HTTP API directly: Meta publishes no Go SDK, and what is used of it is two endpoints.
package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// GraphVersion is the Graph API version the adapter speaks.
const GraphVersion = "v21.0"

// DefaultAPIBaseURL is Meta's Graph API, called when a link names no other.
const DefaultAPIBaseURL = "https://graph.facebook.com/" + GraphVersion

// The credentials a connection holds.
const (
	// CredAccessToken is a (system user's) access token with whatsapp_business_messaging.
	CredAccessToken = "access_token"
	// CredAppSecret is the Meta app's secret: it signs the webhook calls.
	CredAppSecret = "app_secret"
	// CredVerifyToken is the token the user typed in Meta's webhook setup, for its handshake.
	CredVerifyToken = "verify_token"
	// CredPhoneNumberID is the business phone number's id (not the number itself).
	CredPhoneNumberID = "phone_number_id"
)

// TextLimit is the most characters a text message's body holds.
const TextLimit = 4096

// The approval buttons' ids are a prefix and the execution id, at most buttonIDLimit
// characters.
const (
	approvePrefix = "a:"
	rejectPrefix  = "r:"
	buttonIDLimit = 256
)

// answerLimit bounds how much of the Graph API's answer is read.
const answerLimit = 1 << 20

// rateLimitCodes are Graph's error codes that say "too many calls, later", whatever the HTTP
// status: the app's rate limit (4), the business account's (80007), the Cloud API's throughput
// (130429), the spam rate limit (131048) and the pair rate limit (131056).
var rateLimitCodes = []int{4, 80007, 130429, 131048, 131056}

// Platform is WhatsApp's Cloud API.
type Platform struct {
	client *http.Client
}

var _ channels.Platform = (*Platform)(nil)

// New returns WhatsApp calling the Graph API through client.
func New(client *http.Client) *Platform {
	return &Platform{client: client}
}

// Required are the credentials a WhatsApp connection needs.
func (p *Platform) Required() []string {
	return []string{CredAccessToken, CredAppSecret, CredVerifyToken, CredPhoneNumberID}
}

// Connect checks the credentials: the access token must read the phone number. WhatsApp's
// webhook is set in Meta's console by the user (with the verify token), so nothing is
// registered.
func (p *Platform) Connect(ctx context.Context, l channels.Link) error {
	err := p.call(ctx, l, http.MethodGet, "", url.Values{"fields": {"display_phone_number"}}, nil)
	var graph *graphError
	if _, retry := channels.IsRetryLater(err); !retry && errors.As(err, &graph) {
		return apperr.New(apperr.Invalid, "whatsapp_credentials_rejected",
			"WhatsApp did not accept the access token and phone number id: "+graph.Message)
	}
	return err
}

// Send delivers out to the WhatsApp number out.To["to"]: its text converted to WhatsApp's
// format, in messages of at most TextLimit characters, then, when it asks for an approval, a
// message with an Approve and a Reject reply button; the first out.Sent of those messages were
// taken before and are skipped. A RetryLater counts the messages taken.
func (p *Platform) Send(ctx context.Context, l channels.Link, out channels.Outgoing) error {
	to := out.To["to"]
	if to == "" {
		return apperr.Invalidf("to", "a WhatsApp answer needs the number to send to")
	}
	var messages []message
	if strings.TrimSpace(out.Text) != "" {
		for _, piece := range channels.Split(format(out.Text), TextLimit) {
			messages = append(messages, newMessage(to, "text", &textBody{Body: piece}, nil))
		}
	}
	if a := out.Approval; a != nil {
		approve, reject := approvePrefix+a.ExecutionID, rejectPrefix+a.ExecutionID
		if a.ExecutionID == "" || len(approve) > buttonIDLimit {
			return apperr.Invalidf("execution_id", "must be 1 to %d characters to fit WhatsApp's button ids", buttonIDLimit-len(approvePrefix))
		}
		messages = append(messages, newMessage(to, "interactive", nil, &interactive{
			Type: "button",
			Body: interactiveBody{Text: "The agent asks to call the tool *" + a.Tool + "*. Allow it?"},
			Action: interactiveAction{Buttons: []button{
				{Type: "reply", Reply: reply{ID: approve, Title: "Approve"}},
				{Type: "reply", Reply: reply{ID: reject, Title: "Reject"}},
			}},
		}))
	}
	for i := max(out.Sent, 0); i < len(messages); i++ {
		if err := p.call(ctx, l, http.MethodPost, "/messages", nil, messages[i]); err != nil {
			var later *channels.RetryLater
			if errors.As(err, &later) {
				later.Sent = i
			}
			return err
		}
	}
	return nil
}

// message is a message sent with the Cloud API's /messages.
type message struct {
	MessagingProduct string       `json:"messaging_product"`
	RecipientType    string       `json:"recipient_type"`
	To               string       `json:"to"`
	Type             string       `json:"type"`
	Text             *textBody    `json:"text,omitempty"`
	Interactive      *interactive `json:"interactive,omitempty"`
}

func newMessage(to, typ string, text *textBody, in *interactive) message {
	return message{MessagingProduct: "whatsapp", RecipientType: "individual", To: to, Type: typ, Text: text, Interactive: in}
}

type textBody struct {
	PreviewURL bool   `json:"preview_url"`
	Body       string `json:"body"`
}

type interactive struct {
	Type   string            `json:"type"`
	Body   interactiveBody   `json:"body"`
	Action interactiveAction `json:"action"`
}

type interactiveBody struct {
	Text string `json:"text"`
}

type interactiveAction struct {
	Buttons []button `json:"buttons"`
}

type button struct {
	Type  string `json:"type"`
	Reply reply  `json:"reply"`
}

type reply struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// call makes a Graph API call on l's phone number (path after it, query, a JSON body when not
// nil). A refusal is a *graphError, a RetryLater of one for rate limits and 5xx.
func (p *Platform) call(ctx context.Context, l channels.Link, method, path string, query url.Values, body any) error {
	base := strings.TrimRight(l.APIBaseURL, "/")
	if base == "" {
		base = DefaultAPIBaseURL
	}
	u := base + "/" + url.PathEscape(l.Credentials[CredPhoneNumberID]) + path
	if query != nil {
		u += "?" + query.Encode()
	}
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, payload)
	if err != nil {
		return fmt.Errorf("whatsapp: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+l.Credentials[CredAccessToken])
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return unreachable(err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, answerLimit))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	gerr := readGraphError(resp.StatusCode, answer, l.Credentials)
	if retry := channels.RetryAfter(resp, gerr); retry != nil {
		return retry
	}
	if slices.Contains(rateLimitCodes, gerr.Code) {
		// Graph's rate limits come as 400s with a rate-limit code: read them as a 429.
		limited := *resp
		limited.StatusCode = http.StatusTooManyRequests
		return channels.RetryAfter(&limited, gerr)
	}
	return gerr
}

// unreachable is a call that got no answer from the Graph API (refused, timed out, cut short):
// a RetryLater, its message without the URL called (which names the phone number).
func unreachable(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return &channels.RetryLater{Err: fmt.Errorf("whatsapp: the Graph API could not be reached: %w", err)}
}

// graphError is a call the Graph API refused, with its message.
type graphError struct {
	Status  int
	Code    int
	Message string
}

func (e *graphError) Error() string {
	return fmt.Sprintf("whatsapp: %s (HTTP %d, Graph code %d)", e.Message, e.Status, e.Code)
}

// readGraphError reads Graph's error answer {"error":{"message":...,"code":...}}, any
// credential in its message redacted; an answer of another shape is its HTTP status.
func readGraphError(status int, answer []byte, creds channels.Credentials) *graphError {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	e := &graphError{Status: status, Message: http.StatusText(status)}
	if json.Unmarshal(answer, &body) == nil && body.Error.Message != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	}
	for _, name := range []string{CredAccessToken, CredAppSecret, CredVerifyToken} {
		if secret := creds[name]; secret != "" {
			e.Message = strings.ReplaceAll(e.Message, secret, "[redacted]")
		}
	}
	return e
}
