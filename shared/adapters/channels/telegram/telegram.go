// Package telegram is the Telegram platform of agents' channels: a bot's webhook updates
// (verified by the secret token Telegram sends with each) read as messages and approval
// clicks, answers sent with the Bot API's sendMessage in its HTML parse mode, and the webhook
// set on Connect. The Bot API calls go through go-telegram-bot-api, one BotAPI value per call
// (no getMe on construction) whose client carries the call's context.
package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// The credentials a Telegram connection holds.
const (
	// CredBotToken is the bot's token from @BotFather.
	CredBotToken = "bot_token"
	// CredSecretToken is the secret Telegram sends in SecretHeader with each webhook call.
	CredSecretToken = "secret_token"
)

// SecretHeader is the header in which Telegram sends the webhook's secret token.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// AllowedUpdates are the kinds of update the webhook asks Telegram for.
var AllowedUpdates = []string{"message", "callback_query"}

// The approval buttons' callback data: a prefix and the execution id. Telegram keeps at most
// maxCallbackData bytes of it.
const (
	approvePrefix   = "a:"
	rejectPrefix    = "r:"
	maxCallbackData = 64
)

// Platform is Telegram's channels.Platform.
type Platform struct {
	client *http.Client
}

var _ channels.Platform = (*Platform)(nil)

// New returns the Telegram platform, calling the Bot API with client.
func New(client *http.Client) *Platform {
	return &Platform{client: client}
}

// Required are a bot's token and the webhook's secret token.
func (*Platform) Required() []string { return []string{CredBotToken, CredSecretToken} }

// Receive verifies the secret token of a webhook call and reads its update: a text message,
// or a click on an approval button. The click is acknowledged in the webhook's answer itself
// (an answerCallbackQuery Telegram runs on reading it), so that the user's button stops
// spinning and says what was decided.
func (*Platform) Receive(_ context.Context, l channels.Link, r channels.Request) (channels.Received, error) {
	secret := l.Credentials[CredSecretToken]
	got := r.Header.Get(SecretHeader)
	switch {
	case got == "":
		return channels.Received{}, apperr.New(apperr.Unauthorized, "telegram_secret_missing",
			"The call carries no "+SecretHeader+" header: it is not Telegram's.")
	case secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1:
		return channels.Received{}, apperr.New(apperr.Unauthorized, "telegram_secret_mismatch",
			"The call's "+SecretHeader+" is not the connection's secret token: it is not Telegram's.")
	}
	var u tgbotapi.Update
	if err := json.Unmarshal(r.Body, &u); err != nil {
		return channels.Received{}, apperr.Invalidf("body", "not a Telegram update: %v", err)
	}
	ok := channels.Received{Answer: channels.Answer{Status: http.StatusOK}}
	id := strconv.Itoa(u.UpdateID)
	switch {
	case u.Message != nil && u.Message.Text != "" && u.Message.Chat != nil:
		m := u.Message
		in := channels.Inbound{ID: id, Conversation: chatID(m.Chat), Text: m.Text, Reply: replyTo(m.Chat)}
		switch {
		case m.SenderChat != nil:
			// Sent on behalf of a chat (an anonymous admin, a linked channel): from is a
			// placeholder, and a channel's post forwarded to its group is no one writing.
			in.User, in.UserName, in.FromBot = chatID(m.SenderChat), m.SenderChat.Title, m.IsAutomaticForward
		case m.From != nil:
			in.User, in.UserName, in.FromBot = strconv.FormatInt(m.From.ID, 10), nameOf(m.From), m.From.IsBot
		}
		ok.Messages = []channels.Inbound{in}
	case u.CallbackQuery != nil:
		q := u.CallbackQuery
		d, known := decision(q.Data)
		verdict := "This button is no longer in use."
		if known && q.Message != nil && q.Message.Chat != nil && q.From != nil {
			ok.Messages = []channels.Inbound{{ID: id, Conversation: chatID(q.Message.Chat),
				User: strconv.FormatInt(q.From.ID, 10), UserName: nameOf(q.From), FromBot: q.From.IsBot,
				Decision: d, Reply: replyTo(q.Message.Chat)}}
			verdict = "Rejected."
			if d.Approve {
				verdict = "Approved."
			}
		}
		body, err := json.Marshal(map[string]string{"method": "answerCallbackQuery", "callback_query_id": q.ID, "text": verdict})
		if err != nil {
			return channels.Received{}, err
		}
		ok.Answer.ContentType, ok.Answer.Body = "application/json", body
	}
	return ok, nil
}

// Send sends out's text to the chat To["chat_id"] in Telegram's HTML, split to its size
// limit, then, when out asks for an approval, a question with Approve and Reject buttons.
func (p *Platform) Send(ctx context.Context, l channels.Link, out channels.Outgoing) error {
	chat, err := strconv.ParseInt(out.To["chat_id"], 10, 64)
	if err != nil {
		return apperr.Invalidf("chat_id", "not a Telegram chat id: %q", out.To["chat_id"])
	}
	var msgs []tgbotapi.MessageConfig
	for _, text := range Format(out.Text) {
		msgs = append(msgs, message(chat, text))
	}
	if a := out.Approval; a != nil {
		keyboard, err := buttons(a.ExecutionID)
		if err != nil {
			return err
		}
		m := message(chat, "Allow the agent to use <b>"+escape(a.Tool)+"</b>?")
		m.ReplyMarkup = keyboard
		msgs = append(msgs, m)
	}
	for i, m := range msgs {
		if i < out.Sent {
			continue
		}
		if _, err := p.call(ctx, l, "sendMessage", func(b *tgbotapi.BotAPI) (*tgbotapi.APIResponse, error) { return b.Request(m) }); err != nil {
			var later *channels.RetryLater
			if errors.As(err, &later) {
				later.Sent = i
			}
			return err
		}
	}
	return nil
}

// Connect checks the bot's token (getMe) and sets the bot's webhook to l.WebhookURL with the
// connection's secret token, for messages and button clicks only.
func (p *Platform) Connect(ctx context.Context, l channels.Link) error {
	if l.WebhookURL == "" {
		return apperr.Invalidf("webhook_url", "the connection has no webhook URL to give Telegram")
	}
	if l.Credentials[CredSecretToken] == "" {
		return apperr.Invalidf(CredSecretToken, "a secret token is needed to verify Telegram's calls")
	}
	if _, err := p.call(ctx, l, "getMe", func(b *tgbotapi.BotAPI) (*tgbotapi.APIResponse, error) { return b.MakeRequest("getMe", nil) }); err != nil {
		return err
	}
	params := tgbotapi.Params{"url": l.WebhookURL, "secret_token": l.Credentials[CredSecretToken]}
	if err := params.AddInterface("allowed_updates", AllowedUpdates); err != nil {
		return err
	}
	_, err := p.call(ctx, l, "setWebhook", func(b *tgbotapi.BotAPI) (*tgbotapi.APIResponse, error) { return b.MakeRequest("setWebhook", params) })
	return err
}

// call makes one Bot API request with a BotAPI for l, and turns its failure into a RetryLater
// (429, 5xx) or a permanent error that names the method and Telegram's own words, never the
// token (which is in the request's URL).
func (p *Platform) call(ctx context.Context, l channels.Link, method string, do func(*tgbotapi.BotAPI) (*tgbotapi.APIResponse, error)) (*tgbotapi.APIResponse, error) {
	token := l.Credentials[CredBotToken]
	if token == "" {
		return nil, apperr.Invalidf(CredBotToken, "the connection has no bot token")
	}
	c := &contextClient{ctx: ctx, client: p.client}
	bot := &tgbotapi.BotAPI{Token: token, Client: c}
	bot.SetAPIEndpoint(endpoint(l.APIBaseURL))
	resp, err := do(bot)
	if err == nil {
		return resp, nil
	}
	var apiErr *tgbotapi.Error
	var urlErr *url.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Code == http.StatusTooManyRequests && apiErr.RetryAfter > 0:
		return nil, &channels.RetryLater{After: time.Duration(apiErr.RetryAfter) * time.Second,
			Err: fmt.Errorf("telegram %s: %s", method, apiErr.Message)}
	case c.resp != nil && (c.resp.StatusCode == http.StatusTooManyRequests || c.resp.StatusCode >= 500):
		return nil, channels.RetryAfter(c.resp, fmt.Errorf("telegram %s: %s", method, describe(c.resp, apiErr)))
	case apiErr != nil && (apiErr.Code == http.StatusUnauthorized || apiErr.Code == http.StatusNotFound):
		return nil, apperr.New(apperr.Invalid, "telegram_token_refused",
			fmt.Sprintf("Telegram refused the bot token (%s %s): check it with @BotFather.", method, apiErr.Message))
	case apiErr != nil:
		return nil, apperr.New(apperr.BadGateway, "telegram_request_failed", fmt.Sprintf("Telegram %s failed: %s", method, apiErr.Message))
	case errors.As(err, &urlErr):
		return nil, &channels.RetryLater{Err: fmt.Errorf("telegram %s: unreachable: %v", method, urlErr.Err)}
	case c.resp != nil:
		return nil, apperr.New(apperr.BadGateway, "telegram_request_failed", fmt.Sprintf("Telegram %s failed: %s", method, describe(c.resp, nil)))
	default:
		return nil, apperr.New(apperr.BadGateway, "telegram_request_failed", fmt.Sprintf("Telegram %s failed: %s", method, strings.ReplaceAll(err.Error(), token, "…")))
	}
}

// describe is an answer's failure in Telegram's words when it gave some, else its status.
func describe(resp *http.Response, apiErr *tgbotapi.Error) string {
	if apiErr != nil && apiErr.Message != "" {
		return apiErr.Message
	}
	return resp.Status
}

// contextClient makes the BotAPI's requests (which carry no context) with ctx, and keeps the
// last answer's status and headers, which the BotAPI does not return.
type contextClient struct {
	ctx    context.Context
	client *http.Client
	resp   *http.Response
}

func (c *contextClient) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.client.Do(r.WithContext(c.ctx))
	c.resp = resp
	return resp, err
}

// endpoint is the BotAPI's endpoint format for an API base URL ("" is Telegram's own).
func endpoint(base string) string {
	if base == "" {
		return tgbotapi.APIEndpoint
	}
	return strings.ReplaceAll(strings.TrimRight(base, "/"), "%", "%%") + "/bot%s/%s"
}

// message is a sendMessage of html to chat.
func message(chat int64, html string) tgbotapi.MessageConfig {
	m := tgbotapi.NewMessage(chat, html)
	m.ParseMode = tgbotapi.ModeHTML
	return m
}

// buttons are the approval's Approve and Reject buttons for the run executionID.
func buttons(executionID string) (tgbotapi.InlineKeyboardMarkup, error) {
	if executionID == "" || len(rejectPrefix+executionID) > maxCallbackData {
		return tgbotapi.InlineKeyboardMarkup{}, apperr.Invalidf("execution_id",
			"must be 1 to %d bytes to fit a Telegram button", maxCallbackData-len(rejectPrefix))
	}
	return tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData("Approve", approvePrefix+executionID),
		tgbotapi.NewInlineKeyboardButtonData("Reject", rejectPrefix+executionID),
	)), nil
}

// decision reads an approval button's callback data; false for data that is not one.
func decision(data string) (*channels.Decision, bool) {
	if id, ok := strings.CutPrefix(data, approvePrefix); ok && id != "" {
		return &channels.Decision{ExecutionID: id, Approve: true}, true
	}
	if id, ok := strings.CutPrefix(data, rejectPrefix); ok && id != "" {
		return &channels.Decision{ExecutionID: id}, true
	}
	return nil, false
}

func chatID(c *tgbotapi.Chat) string { return strconv.FormatInt(c.ID, 10) }

func replyTo(c *tgbotapi.Chat) channels.Target { return channels.Target{"chat_id": chatID(c)} }

// nameOf is a user's first and last name, else their username.
func nameOf(u *tgbotapi.User) string {
	if n := strings.TrimSpace(u.FirstName + " " + u.LastName); n != "" {
		return n
	}
	return u.UserName
}
