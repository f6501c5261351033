package discordtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// User is who uses a command or clicks a button.
type User struct {
	ID         string
	Username   string
	GlobalName string
	Bot        bool
}

// Ask is a use of the /ask command.
type Ask struct {
	// ChannelID is where it was used; GuildID its server, "" for a direct message (the user then
	// comes as user, not as member.user).
	ChannelID string
	GuildID   string
	User      User
	Question  string
}

// Click is a click on a message's button.
type Click struct {
	ChannelID string
	GuildID   string
	User      User
	// CustomID is the button's custom_id (take it from a Sent message's Buttons).
	CustomID string
}

// Interaction is an interaction as Discord delivers it: its id, its token (which opens its
// webhook on this server) and its JSON body, to sign.
type Interaction struct {
	ID    string
	Token string
	Body  []byte
}

// Ping is the PING Discord sends to check the interactions endpoint.
func (s *Server) Ping() Interaction {
	return s.interaction(1, nil)
}

// Ask is a use of /ask, as Discord delivers it.
func (s *Server) Ask(a Ask) Interaction {
	fields := map[string]any{
		"channel_id": a.ChannelID,
		"channel":    map[string]any{"id": a.ChannelID, "type": channelType(a.GuildID)},
		"data": map[string]any{
			"id": "1100000000000000099", "name": "ask", "type": 1,
			"options": []any{map[string]any{"name": "question", "type": 3, "value": a.Question}},
		},
	}
	s.invoker(fields, a.GuildID, a.User)
	return s.interaction(2, fields)
}

// Click is a click on a button of a message the bot sent, as Discord delivers it.
func (s *Server) Click(c Click) Interaction {
	fields := map[string]any{
		"channel_id": c.ChannelID,
		"channel":    map[string]any{"id": c.ChannelID, "type": channelType(c.GuildID)},
		"data":       map[string]any{"custom_id": c.CustomID, "component_type": 2},
		"message": map[string]any{
			"id": "1100000000000000098", "channel_id": c.ChannelID, "type": 0, "content": "",
			"timestamp":  "2026-01-01T00:00:00.000000+00:00",
			"author":     map[string]any{"id": s.ApplicationID, "username": "Agent", "bot": true},
			"components": []any{map[string]any{"type": 1, "components": []any{map[string]any{"type": 2, "style": 3, "label": "Approve", "custom_id": c.CustomID}}}},
		},
	}
	s.invoker(fields, c.GuildID, c.User)
	return s.interaction(3, fields)
}

// invoker sets who made the interaction: member.user in a server, user in a direct message.
func (s *Server) invoker(fields map[string]any, guildID string, u User) {
	user := map[string]any{"id": u.ID, "username": u.Username, "global_name": nil, "discriminator": "0", "avatar": nil}
	if u.GlobalName != "" {
		user["global_name"] = u.GlobalName
	}
	if u.Bot {
		user["bot"] = true
	}
	if guildID == "" {
		fields["user"] = user
		fields["context"] = 1
		fields["authorizing_integration_owners"] = map[string]any{"1": u.ID}
		return
	}
	fields["guild_id"] = guildID
	fields["guild_locale"] = "en-US"
	fields["context"] = 0
	fields["authorizing_integration_owners"] = map[string]any{"0": guildID}
	fields["member"] = map[string]any{
		"user": user, "roles": []any{}, "nick": nil, "joined_at": "2025-01-01T00:00:00.000000+00:00",
		"deaf": false, "mute": false, "permissions": "2248473465835073",
	}
}

// channelType is a guild text channel (0) in a server, a DM (1) otherwise.
func channelType(guildID string) int {
	if guildID == "" {
		return 1
	}
	return 0
}

// interaction is an interaction of type kind with fields, a fresh id and a fresh token that
// this server's webhooks take.
func (s *Server) interaction(kind int, fields map[string]any) Interaction {
	s.mu.Lock()
	id := s.snowflake()
	token := "aW50ZXJhY3Rpb246" + id
	s.tokens[token] = true
	s.mu.Unlock()
	body := map[string]any{
		"id": id, "application_id": s.ApplicationID, "type": kind, "token": token, "version": 1,
		"app_permissions": "2248473465835073", "entitlements": []any{}, "locale": "en-US",
	}
	for k, v := range fields {
		body[k] = v
	}
	raw, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return Interaction{ID: id, Token: token, Body: raw}
}

// Sign is the headers Discord sends body with at time at: X-Signature-Timestamp (Unix seconds)
// and X-Signature-Ed25519, the hex Ed25519 signature of the timestamp followed by the body.
func (s *Server) Sign(body []byte, at time.Time) http.Header {
	stamp := strconv.FormatInt(at.Unix(), 10)
	sig := ed25519.Sign(s.private, append([]byte(stamp), body...))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Discord-Interactions/1.0 (+https://discord.com)")
	h.Set("X-Signature-Ed25519", hex.EncodeToString(sig))
	h.Set("X-Signature-Timestamp", stamp)
	return h
}

// Request is body POSTed to url (a connection's webhook_url), signed at time at as Discord does.
func (s *Server) Request(ctx context.Context, url string, body []byte, at time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = s.Sign(body, at)
	return req, nil
}
