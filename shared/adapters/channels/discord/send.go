package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/agentplane/agentplane/shared/channels"
)

// maxCustomID is the longest custom_id Discord takes on a button.
const maxCustomID = 100

// Send posts out as follow-up messages of the interaction out.To names (its application id and
// token): the text as it is (Discord reads Markdown, links included), split to MessageLimit,
// then the approval, when asked, as a message of its own with an Approve and a Reject button.
// The first follow-up of a deferred /ask fills the "is thinking" answer; later ones are new
// messages, so that no Send overwrites another's. An Outgoing with neither text nor approval
// sends nothing. The pieces before out.Sent, taken on an earlier attempt, are not sent again; a
// *channels.RetryLater counts the pieces taken so far.
func (p *Platform) Send(ctx context.Context, l channels.Link, out channels.Outgoing) error {
	app, token := out.To[targetApplicationID], out.To[targetToken]
	if app == "" || token == "" {
		return errors.New("discord: the answer's target names no application_id and token")
	}
	endpoint := apiBase(l) + "/webhooks/" + url.PathEscape(app) + "/" + url.PathEscape(token) + "?wait=true"
	var messages []discordgo.WebhookParams
	if strings.TrimSpace(out.Text) != "" {
		for _, piece := range channels.Split(out.Text, MessageLimit) {
			messages = append(messages, discordgo.WebhookParams{Content: piece})
		}
	}
	if out.Approval != nil {
		approval, err := approvalMessage(*out.Approval)
		if err != nil {
			return err
		}
		messages = append(messages, approval)
	}
	for i := out.Sent; i < len(messages); i++ {
		msg := messages[i]
		msg.AllowedMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
		if err := p.call(ctx, "sending a message", http.MethodPost, endpoint, "", msg, nil); err != nil {
			var later *channels.RetryLater
			if errors.As(err, &later) {
				later.Sent = i
			}
			return err
		}
	}
	return nil
}

// approvalMessage asks whether the run may call the tool, with a button for each answer whose
// custom_id carries the execution id.
func approvalMessage(a channels.Approval) (discordgo.WebhookParams, error) {
	if a.ExecutionID == "" || len(approvePrefix+a.ExecutionID) > maxCustomID {
		return discordgo.WebhookParams{}, fmt.Errorf(
			"discord: an execution id of 1 to %d characters fits a button, not %d", maxCustomID-len(approvePrefix), len(a.ExecutionID))
	}
	tool := strings.ReplaceAll(a.Tool, "`", "")
	return discordgo.WebhookParams{
		Content: "The agent asks to use the tool `" + tool + "`. Allow it?",
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Approve", Style: discordgo.SuccessButton, CustomID: approvePrefix + a.ExecutionID},
			discordgo.Button{Label: "Reject", Style: discordgo.DangerButton, CustomID: rejectPrefix + a.ExecutionID},
		}}},
	}, nil
}
