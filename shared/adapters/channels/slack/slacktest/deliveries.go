package slacktest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Delivery is a call Slack makes to an app's request URL: its body and content type, and the
// number of the retry it is (0: the first try).
type Delivery struct {
	Body        []byte
	ContentType string
	Retry       int
}

// Header is the headers Slack sends with d at time at: its content type, the request
// timestamp, the v0 signature with secret (and X-Slack-Retry-Num on a retry).
func (d Delivery) Header(secret string, at time.Time) http.Header {
	stamp := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + stamp + ":"))
	mac.Write(d.Body)
	h := http.Header{}
	h.Set("Content-Type", d.ContentType)
	h.Set("X-Slack-Request-Timestamp", stamp)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	if d.Retry > 0 {
		h.Set("X-Slack-Retry-Num", strconv.Itoa(d.Retry))
		h.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	return h
}

// Request is d as the POST Slack makes to url (a connection's webhook_url), signed with
// secret at time at.
func (d Delivery) Request(ctx context.Context, url, secret string, at time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return nil, err
	}
	req.Header = d.Header(secret, at)
	return req, nil
}

// URLVerification is the Events API's check of a request URL, answered with challenge.
func URLVerification(challenge string) Delivery {
	return jsonDelivery(map[string]any{"token": "legacy-verification-token", "challenge": challenge,
		"type": "url_verification"})
}

// Message is an event an app receives: a message (Type "message") or a mention of its bot
// ("app_mention").
type Message struct {
	// EventID is the envelope's event_id; a retry carries the same.
	EventID string
	// Type is "message" (the default) or "app_mention"; Subtype is a message's subtype
	// (bot_message, file_share, message_changed, channel_join, ...), "" for a user's message.
	Type    string
	Subtype string
	// Channel and ChannelType ("channel", "group", "im", "mpim") are where it was written.
	Channel     string
	ChannelType string
	// User wrote Text; BotID is set on a bot's message (BotID for the connection's own).
	User  string
	BotID string
	Text  string
	// TS is the message's ts; ThreadTS the thread's when it is a reply in one.
	TS       string
	ThreadTS string
}

// Event is m in an event_callback envelope, delivered to the workspace's bot (BotUserID).
func Event(m Message) Delivery {
	typ := m.Type
	if typ == "" {
		typ = "message"
	}
	ev := map[string]any{"type": typ, "channel": m.Channel, "user": m.User, "text": m.Text, "ts": m.TS,
		"event_ts": m.TS}
	if typ == "message" {
		ev["channel_type"] = m.ChannelType
	}
	for k, v := range map[string]string{"subtype": m.Subtype, "bot_id": m.BotID, "thread_ts": m.ThreadTS} {
		if v != "" {
			ev[k] = v
		}
	}
	return jsonDelivery(map[string]any{
		"token":      "legacy-verification-token",
		"team_id":    TeamID,
		"api_app_id": "A0APP",
		"event":      ev,
		"type":       "event_callback",
		"event_id":   m.EventID,
		"event_time": 1700000000,
		"authorizations": []map[string]any{{"enterprise_id": nil, "team_id": TeamID, "user_id": BotUserID,
			"is_bot": true, "is_enterprise_install": false}},
		"is_ext_shared_channel": false,
		"event_context":         "4-eyJldCI6Im1lc3NhZ2UifQ",
	})
}

// Click is a click on a Block Kit button of a message the app posted.
type Click struct {
	// User clicked; UserName is their username.
	User     string
	UserName string
	// Channel, MessageTS and ThreadTS are the message's (ThreadTS "" when it is in no thread).
	Channel   string
	MessageTS string
	ThreadTS  string
	// ActionID and Value are the button's; ActionTS when it was clicked; TriggerID Slack's
	// id of the interaction.
	ActionID  string
	Value     string
	ActionTS  string
	TriggerID string
}

// BlockActions is c as Slack's interactivity call: a form whose payload is the block_actions
// JSON.
func BlockActions(c Click) Delivery {
	message := map[string]any{"type": "message", "ts": c.MessageTS, "bot_id": BotID, "user": BotUserID,
		"text": "The agent wants to run a tool. Allow it?"}
	container := map[string]any{"type": "message", "message_ts": c.MessageTS, "channel_id": c.Channel,
		"is_ephemeral": false}
	if c.ThreadTS != "" {
		message["thread_ts"] = c.ThreadTS
		container["thread_ts"] = c.ThreadTS
	}
	payload, _ := json.Marshal(map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": c.User, "username": c.UserName, "name": c.UserName, "team_id": TeamID},
		"api_app_id":   "A0APP",
		"token":        "legacy-verification-token",
		"container":    container,
		"trigger_id":   c.TriggerID,
		"team":         map[string]any{"id": TeamID, "domain": "slacktest"},
		"channel":      map[string]any{"id": c.Channel, "name": "general"},
		"message":      message,
		"response_url": "https://hooks.slack.com/actions/" + TeamID + "/1/x",
		"actions": []map[string]any{{"action_id": c.ActionID, "block_id": "approval", "value": c.Value,
			"type": "button", "action_ts": c.ActionTS, "text": map[string]any{"type": "plain_text", "text": "Approve"}}},
	})
	return Delivery{Body: []byte(url.Values{"payload": {string(payload)}}.Encode()),
		ContentType: "application/x-www-form-urlencoded"}
}

func jsonDelivery(body map[string]any) Delivery {
	b, _ := json.Marshal(body)
	return Delivery{Body: b, ContentType: "application/json"}
}
