package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Window is how far a call's X-Slack-Request-Timestamp may be from its arrival (Slack's
// guidance: five minutes), so that a recorded call cannot be played again later.
const Window = 5 * time.Minute

// acknowledged is the answer to every call Slack makes but the URL check: 200 at once, nothing
// else.
var acknowledged = channels.Answer{Status: http.StatusOK}

// Receive verifies a call's v0 signature and reads it: the Events API's URL check answered
// with its challenge, a message or a mention of the bot as an Inbound (its event_id its ID, its
// thread the conversation), and a click on an approval button as an Inbound with its Decision.
func (p *Platform) Receive(_ context.Context, l channels.Link, r channels.Request) (channels.Received, error) {
	if err := verify(l.Credentials[CredSigningSecret], r); err != nil {
		return channels.Received{}, err
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return interaction(r.Body)
	}
	return event(r.Body)
}

// verify checks r's X-Slack-Signature, v0= the HMAC-SHA256 of "v0:{timestamp}:{body}" keyed with
// the signing secret, and that its timestamp is within Window of r.Now. slack-go's
// SecretsVerifier checks the time against the clock rather than r.Now, hence this.
func verify(secret string, r channels.Request) error {
	sig, stamp := r.Header.Get("X-Slack-Signature"), r.Header.Get("X-Slack-Request-Timestamp")
	if sig == "" || stamp == "" {
		return apperr.New(apperr.Unauthorized, "slack_signature_missing",
			"The call carries no Slack signature (X-Slack-Signature and X-Slack-Request-Timestamp).")
	}
	secs, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || r.Now.Sub(time.Unix(secs, 0)).Abs() > Window {
		return apperr.New(apperr.Unauthorized, "slack_timestamp_stale",
			"The call's X-Slack-Request-Timestamp is not within five minutes of its arrival.")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + stamp + ":"))
	mac.Write(r.Body)
	want := "v0=" + hex.EncodeToString(mac.Sum(nil))
	if secret == "" || !hmac.Equal([]byte(want), []byte(sig)) {
		return apperr.New(apperr.Unauthorized, "slack_signature_invalid",
			"The call's Slack signature does not match the connection's signing secret.")
	}
	return nil
}

// event reads an Events API call (signed, so Slack's: one it cannot read as an event is taken
// as one with nothing to answer, one that is not JSON is refused).
func event(body []byte) (channels.Received, error) {
	e, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	if err != nil && json.Valid(body) {
		// An event slack-go does not know (a type Slack added since): nothing to answer.
		return channels.Received{Answer: acknowledged}, nil
	}
	if err != nil {
		return channels.Received{}, apperr.Invalidf("body", "not an Events API call Slack sends: %v", err)
	}
	switch data := e.Data.(type) {
	case *slackevents.EventsAPIURLVerificationEvent:
		return channels.Received{Answer: channels.Answer{Status: http.StatusOK, ContentType: "text/plain",
			Body: []byte(data.Challenge)}}, nil
	case *slackevents.EventsAPICallbackEvent:
		in, found := callback(data, e.InnerEvent.Data)
		if !found {
			return channels.Received{Answer: acknowledged}, nil
		}
		return channels.Received{Answer: acknowledged, Messages: []channels.Inbound{in}}, nil
	default:
		return channels.Received{Answer: acknowledged}, nil
	}
}

// callback reads an event_callback's event: a message (written, or sharing a file) or a
// mention of the bot. A message in a channel that mentions the bot is left to the app_mention
// that Slack sends for it too.
func callback(env *slackevents.EventsAPICallbackEvent, inner any) (channels.Inbound, bool) {
	bots := botUsers(env.Authorizations)
	var in channels.Inbound
	var channel, ts, thread string
	switch ev := inner.(type) {
	case *slackevents.MessageEvent:
		switch ev.SubType {
		case "", "file_share", "bot_message":
		default:
			return channels.Inbound{}, false
		}
		if (ev.ChannelType == "channel" || ev.ChannelType == "group") && mentions(ev.Text, bots) {
			return channels.Inbound{}, false
		}
		in = channels.Inbound{User: ev.User, UserName: ev.Username, Text: ev.Text,
			FromBot: ev.BotID != "" || ev.SubType == "bot_message"}
		channel, ts, thread = ev.Channel, ev.TimeStamp, ev.ThreadTimeStamp
	case *slackevents.AppMentionEvent:
		in = channels.Inbound{User: ev.User, Text: ev.Text, FromBot: ev.BotID != ""}
		channel, ts, thread = ev.Channel, ev.TimeStamp, ev.ThreadTimeStamp
	default:
		return channels.Inbound{}, false
	}
	if thread == "" {
		thread = ts
	}
	in.ID = env.EventID
	in.Text = strings.TrimSpace(stripMentions(in.Text, bots))
	in.Conversation = channel + ":" + thread
	in.Reply = channels.Target{TargetChannel: channel, TargetThreadTS: thread}
	return in, true
}

// botUsers are the user ids of the bots the event was delivered to: the connection's own.
func botUsers(auths []slackapi.EventAuthorization) []string {
	var ids []string
	for _, a := range auths {
		if a.IsBot && a.UserID != "" {
			ids = append(ids, a.UserID)
		}
	}
	return ids
}

// mentions reports whether text mentions one of bots (<@U...>).
func mentions(text string, bots []string) bool {
	for _, id := range bots {
		if strings.Contains(text, "<@"+id+">") {
			return true
		}
	}
	return false
}

// stripMentions removes the mentions of bots from text.
func stripMentions(text string, bots []string) string {
	for _, id := range bots {
		text = strings.ReplaceAll(strings.ReplaceAll(text, "<@"+id+"> ", ""), "<@"+id+">", "")
	}
	return text
}

// interaction reads an interactivity call (payload=<json>): a click on an approval button.
func interaction(body []byte) (channels.Received, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		return channels.Received{}, apperr.Invalidf("payload", "an interactivity call carries its payload as JSON in the form field payload")
	}
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		return channels.Received{}, apperr.Invalidf("payload", "not an interaction Slack sends: %v", err)
	}
	if cb.Type != slackapi.InteractionTypeBlockActions {
		return channels.Received{Answer: acknowledged}, nil
	}
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	if thread == "" {
		thread = cb.Message.Timestamp
	}
	var msgs []channels.Inbound
	for _, a := range cb.ActionCallback.BlockActions {
		if (a.ActionID != ActionApprove && a.ActionID != ActionReject) || a.Value == "" {
			continue
		}
		msgs = append(msgs, channels.Inbound{
			ID:           "action:" + a.ActionTs + ":" + cb.TriggerID,
			Conversation: channel + ":" + thread,
			User:         cb.User.ID,
			UserName:     cb.User.Name,
			Decision:     &channels.Decision{ExecutionID: a.Value, Approve: a.ActionID == ActionApprove},
			Reply:        channels.Target{TargetChannel: channel, TargetThreadTS: thread},
		})
	}
	return channels.Received{Answer: acknowledged, Messages: msgs}, nil
}
