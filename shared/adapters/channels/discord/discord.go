// Package discord is the Discord platform of channels: interactions that Discord delivers over
// HTTP to the connection's webhook (the /ask slash command and clicks on the approval buttons),
// answered with follow-up messages through each interaction's webhook. It needs no gateway
// connection.
package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// DefaultAPIBaseURL is Discord's API, used when a Link names none.
const DefaultAPIBaseURL = "https://discord.com/api/v10"

// MessageLimit is the most characters a Discord message's content holds.
const MessageLimit = 2000

// The credentials a connection holds.
const (
	credBotToken      = "bot_token"
	credPublicKey     = "public_key"
	credApplicationID = "application_id"
)

// The keys of a Target: the interaction's application and its token, which opens its webhook.
const (
	targetApplicationID = "application_id"
	targetToken         = "token"
)

// userAgent is the User-Agent Discord asks API clients to send.
const userAgent = "DiscordBot (https://github.com/agentplane/agentplane, 1)"

// Platform is Discord for channels.
type Platform struct {
	client *http.Client
}

var _ channels.Platform = (*Platform)(nil)

// New returns the Discord platform calling Discord's API through client.
func New(client *http.Client) *Platform { return &Platform{client: client} }

// Required are the bot's token, the application's public key (hex, to verify interactions) and
// the application's id.
func (p *Platform) Required() []string {
	return []string{credBotToken, credPublicKey, credApplicationID}
}

// apiBase is the API l's calls go to.
func apiBase(l channels.Link) string {
	if l.APIBaseURL != "" {
		return strings.TrimRight(l.APIBaseURL, "/")
	}
	return DefaultAPIBaseURL
}

// apiError is an answer of Discord's API other than 2xx, with Discord's own message.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// call makes one request to Discord's API with body as JSON (none when nil), authorized as the
// bot when botToken is set, and decodes a 2xx answer into into (when not nil). A 429 or 5xx is
// a *channels.RetryLater (after Discord's retry_after); the error names what was done and
// Discord's message, never the URL (an interaction's token is in it) nor a credential.
func (p *Platform) call(ctx context.Context, what, method, endpoint, botToken string, body, into any) error {
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("discord: %s: %w", what, err)
		}
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, endpoint, payload)
	if err != nil {
		return fmt.Errorf("discord: %s: the request cannot be made", what)
	}
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if botToken != "" {
		req.Header.Set("Authorization", "Bot "+botToken)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("discord: %s: %w", what, ctxErr)
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return &channels.RetryLater{Err: fmt.Errorf("discord: %s: %w", what, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return &channels.RetryLater{Err: fmt.Errorf("discord: %s: reading the answer: %w", what, err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if into == nil || len(raw) == 0 {
			return nil
		}
		if err := json.Unmarshal(raw, into); err != nil {
			return fmt.Errorf("discord: %s: the answer is not the documented JSON: %w", what, err)
		}
		return nil
	}
	return failure(what, resp, raw)
}

// failure is the error of a non-2xx answer: RetryLater for 429 (after the body's retry_after,
// else the Retry-After header) and 5xx, else a permanent error with Discord's message.
func failure(what string, resp *http.Response, raw []byte) error {
	apiErr := &apiError{Status: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
	var msg discordgo.APIErrorMessage
	if json.Unmarshal(raw, &msg) == nil && msg.Message != "" {
		apiErr.Message = fmt.Sprintf("%s (code %d)", msg.Message, msg.Code)
	}
	err := fmt.Errorf("discord: %s: %w", what, apiErr)
	retry := channels.RetryAfter(resp, err)
	if retry == nil {
		return err
	}
	var later *channels.RetryLater
	var limited discordgo.TooManyRequests
	if errors.As(retry, &later) && resp.StatusCode == http.StatusTooManyRequests &&
		json.Unmarshal(raw, &limited) == nil && limited.RetryAfter > 0 {
		later.After = limited.RetryAfter
	}
	return retry
}

// publicKey is the connection's public key, to verify interactions with.
func publicKey(c channels.Credentials) (ed25519.PublicKey, error) {
	key, err := hex.DecodeString(strings.TrimSpace(c[credPublicKey]))
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, apperr.Invalidf(credPublicKey,
			"it is not the application's public key (64 hex digits, General Information > Public Key)")
	}
	return key, nil
}
