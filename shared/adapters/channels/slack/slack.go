// Package slack is the Slack platform of channels: a Slack app's Events API and interactivity
// calls (signed with its signing secret) read as the agent's messages and approval clicks, and
// its answers posted in the thread with the bot token through the Web API (slack-go).
package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// The credentials a Slack connection needs: the app's bot token (xoxb-...) and its signing secret.
const (
	CredBotToken      = "bot_token"
	CredSigningSecret = "signing_secret"
)

// DefaultAPIURL is Slack's Web API (GovSlack's is https://slack-gov.com/api/).
const DefaultAPIURL = "https://slack.com/api/"

// MessageLimit is the most characters one posted message holds: Slack's guidance for a
// message's text (its hard limit is 40,000).
const MessageLimit = 3000

// The action_id of the approval buttons; their value is the execution id.
const (
	ActionApprove = "agentplane_approve"
	ActionReject  = "agentplane_reject"
)

// The keys of a Slack Target: the channel and the thread's ts.
const (
	TargetChannel  = "channel"
	TargetThreadTS = "thread_ts"
)

// fence is a Markdown code fence, closed at the end of a piece and opened again in the next
// when a split falls inside a code block.
const fence = "```"

// Platform is Slack.
type Platform struct {
	client *http.Client
}

var _ channels.Platform = (*Platform)(nil)

// New returns Slack calling its Web API through client.
func New(client *http.Client) *Platform {
	return &Platform{client: client}
}

// Required are the bot token and the signing secret.
func (p *Platform) Required() []string {
	return []string{CredBotToken, CredSigningSecret}
}

// Connect checks the bot token with auth.test, and that it is a bot's: a user's token would
// post the answers as that user, which come back as messages not marked as a bot's.
func (p *Platform) Connect(ctx context.Context, l channels.Link) error {
	api, err := p.api(l)
	if err != nil {
		return err
	}
	who, err := api.AuthTestContext(ctx)
	var refused slackapi.SlackErrorResponse
	switch {
	case errors.As(err, &refused):
		return apperr.Invalidf("credentials."+CredBotToken, "Slack refused it (auth.test: %s)", refused.Err)
	case err != nil:
		return failure("auth.test", err)
	case who.BotID == "":
		return apperr.Invalidf("credentials."+CredBotToken, "is a user's token, not the app's Bot User OAuth Token (xoxb-...)")
	}
	return nil
}

// Send posts out's text in mrkdwn in the thread out.To names, in pieces of at most
// MessageLimit characters, then the approval it asks for, if any, with an Approve and a Reject
// button; the first out.Sent of them, posted on earlier attempts, are skipped.
func (p *Platform) Send(ctx context.Context, l channels.Link, out channels.Outgoing) error {
	channel := out.To[TargetChannel]
	if channel == "" {
		return fmt.Errorf("slack: the answer has no channel to go to")
	}
	api, err := p.api(l)
	if err != nil {
		return err
	}
	var msgs [][]slackapi.MsgOption
	if strings.TrimSpace(out.Text) != "" {
		for _, piece := range pieces(mrkdwn(out.Text)) {
			msgs = append(msgs, []slackapi.MsgOption{slackapi.MsgOptionText(piece, false)})
		}
	}
	if a := out.Approval; a != nil {
		msgs = append(msgs, approval(a))
	}
	for i := max(out.Sent, 0); i < len(msgs); i++ {
		msg := msgs[i]
		if ts := out.To[TargetThreadTS]; ts != "" {
			msg = append(msg, slackapi.MsgOptionTS(ts))
		}
		if _, _, err := api.PostMessageContext(ctx, channel, msg...); err != nil {
			return sentBefore(failure("chat.postMessage", err), i)
		}
	}
	return nil
}

// sentBefore is err, a *channels.RetryLater counting the n pieces Slack took before it.
func sentBefore(err error, n int) error {
	var later *channels.RetryLater
	if errors.As(err, &later) {
		later.Sent = n
	}
	return err
}

// pieces splits text to MessageLimit, a code block cut in two closed in one piece and opened
// again in the next.
func pieces(text string) []string {
	reserve := 2 * len("\n"+fence)
	out := channels.Split(text, MessageLimit-reserve)
	open := false
	for i, piece := range out {
		if open {
			piece = fence + "\n" + piece
		}
		open = strings.Count(piece, fence)%2 == 1
		if open {
			piece += "\n" + fence
		}
		out[i] = piece
	}
	return out
}

// approval is the message asking whether a.ExecutionID may call a.Tool: a section and the two
// buttons, whose value is the execution id.
func approval(a *channels.Approval) []slackapi.MsgOption {
	ask := fmt.Sprintf("The agent wants to run *%s*. Allow it?", escaper.Replace(a.Tool))
	approve := slackapi.NewButtonBlockElement(ActionApprove, a.ExecutionID,
		slackapi.NewTextBlockObject(slackapi.PlainTextType, "Approve", false, false)).WithStyle(slackapi.StylePrimary)
	reject := slackapi.NewButtonBlockElement(ActionReject, a.ExecutionID,
		slackapi.NewTextBlockObject(slackapi.PlainTextType, "Reject", false, false)).WithStyle(slackapi.StyleDanger)
	return []slackapi.MsgOption{
		slackapi.MsgOptionText(ask, false),
		slackapi.MsgOptionBlocks(
			slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, ask, false, false), nil, nil),
			slackapi.NewActionBlock("approval", approve, reject),
		),
	}
}

// api is the Web API client of l: its bot token, its API base, p's HTTP client.
func (p *Platform) api(l channels.Link) (*slackapi.Client, error) {
	token := l.Credentials[CredBotToken]
	if token == "" {
		return nil, apperr.Invalidf("credentials."+CredBotToken, "is required")
	}
	base := l.APIBaseURL
	if base == "" {
		base = DefaultAPIURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return slackapi.New(token, slackapi.OptionAPIURL(base), slackapi.OptionHTTPClient(busyAsRetry{p.client})), nil
}

// busyAsRetry is an HTTP client that turns Slack's answers 429 and 5xx into a
// *channels.RetryLater (with the answer's Retry-After), before slack-go reads them, and so a
// Slack it could not reach (refused, timed out), but not one the outbound policy forbids.
type busyAsRetry struct{ client *http.Client }

func (c busyAsRetry) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, unreachable(err)
	}
	if retry := channels.RetryAfter(resp, fmt.Errorf("slack answered %s", resp.Status)); retry != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		return nil, retry
	}
	return resp, nil
}

// unreachable is the transport error err without the request's URL: a *channels.RetryLater
// (after the queue's own back-off), unless retrying cannot help (an address the outbound
// policy refuses, a host that does not exist).
func unreachable(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	err = fmt.Errorf("slack could not be reached: %w", err)
	if safehttp.Permanent(err) {
		return err
	}
	return &channels.RetryLater{Err: err}
}

// failure is err of a Web API method as the error Send and Connect return: Slack's own error
// code, or the RetryLater or the failure to reach it that err is.
func failure(method string, err error) error {
	var refused slackapi.SlackErrorResponse
	if errors.As(err, &refused) {
		return fmt.Errorf("slack %s: %s", method, refused.Err)
	}
	return fmt.Errorf("slack %s: %w", method, err)
}
