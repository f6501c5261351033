package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// CommandName is the slash command users ask the agent with, and QuestionOption its one option.
const (
	CommandName    = "ask"
	QuestionOption = "question"
)

// maxSkew is how far an interaction's signed timestamp may be from its arrival: older calls are
// replays.
const maxSkew = 5 * time.Minute

// The prefixes of the approval buttons' custom_id, followed by the execution id.
const (
	approvePrefix = "a:"
	rejectPrefix  = "r:"
)

// Receive verifies an interaction's Ed25519 signature (of X-Signature-Timestamp and the body,
// with the connection's public key) and its timestamp, and reads it: a PING is answered PONG,
// /ask is deferred (the answer comes as a follow-up) and brings the question, a click on an
// approval button is acknowledged and brings the decision.
func (p *Platform) Receive(ctx context.Context, l channels.Link, r channels.Request) (channels.Received, error) {
	key, err := publicKey(l.Credentials)
	if err != nil {
		return channels.Received{}, err
	}
	if err := verify(ctx, key, r); err != nil {
		return channels.Received{}, err
	}
	var in discordgo.Interaction
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return channels.Received{}, apperr.Invalidf("body", "it is not a Discord interaction")
	}
	switch in.Type {
	case discordgo.InteractionPing:
		return answer(discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
	case discordgo.InteractionApplicationCommand:
		return command(in)
	case discordgo.InteractionMessageComponent:
		return click(in)
	}
	return channels.Received{}, apperr.Invalidf("type", "interactions of type %d are not answered", in.Type)
}

// verify checks r's signature as Discord documents it, and that it was signed within maxSkew of
// its arrival.
func verify(ctx context.Context, key ed25519.PublicKey, r channels.Request) error {
	stamp := r.Header.Get("X-Signature-Timestamp")
	if r.Header.Get("X-Signature-Ed25519") == "" || stamp == "" {
		return apperr.New(apperr.Unauthorized, "missing_signature",
			"the call carries no X-Signature-Ed25519 and X-Signature-Timestamp headers")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(r.Body))
	if err != nil {
		return err
	}
	req.Header = r.Header
	if !discordgo.VerifyInteraction(req, key) {
		return apperr.New(apperr.Unauthorized, "invalid_signature",
			"the call's signature does not match the application's public key")
	}
	secs, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || r.Now.Sub(time.Unix(secs, 0)).Abs() > maxSkew {
		return apperr.New(apperr.Unauthorized, "stale_timestamp",
			"the call's X-Signature-Timestamp is more than 5 minutes from its arrival")
	}
	return nil
}

// command reads a use of /ask; another command of the application is told, to its user alone,
// that only /ask is answered.
func command(in discordgo.Interaction) (channels.Received, error) {
	data := in.ApplicationCommandData()
	if data.Name != CommandName {
		return answer(discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{
				Content: "This app answers /" + CommandName + " only.",
				Flags:   discordgo.MessageFlagsEphemeral,
			},
		})
	}
	question := data.GetOption(QuestionOption)
	if question == nil || question.Type != discordgo.ApplicationCommandOptionString {
		return channels.Received{}, apperr.Invalidf("data.options", "/%s comes without its %s", CommandName, QuestionOption)
	}
	msg, err := inbound(in)
	if err != nil {
		return channels.Received{}, err
	}
	msg.Text = question.StringValue()
	return answer(discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource},
		msg)
}

// click reads a click on an approval button; other components are only acknowledged.
func click(in discordgo.Interaction) (channels.Received, error) {
	ack := discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
	decision := decisionOf(in.MessageComponentData().CustomID)
	if decision == nil {
		return answer(ack)
	}
	msg, err := inbound(in)
	if err != nil {
		return channels.Received{}, err
	}
	msg.Decision = decision
	return answer(ack, msg)
}

// decisionOf reads an approval button's custom_id; nil when it is not one.
func decisionOf(customID string) *channels.Decision {
	for prefix, approve := range map[string]bool{approvePrefix: true, rejectPrefix: false} {
		if id, ok := strings.CutPrefix(customID, prefix); ok && id != "" {
			return &channels.Decision{ExecutionID: id, Approve: approve}
		}
	}
	return nil
}

// inbound is what every interaction says of itself: its id, channel and user, and where its
// answer goes.
func inbound(in discordgo.Interaction) (channels.Inbound, error) {
	user := in.User
	if in.Member != nil && in.Member.User != nil {
		user = in.Member.User
	}
	if user == nil || user.ID == "" {
		return channels.Inbound{}, apperr.Invalidf("user", "the interaction names no user")
	}
	if in.ID == "" || in.ChannelID == "" || in.AppID == "" || in.Token == "" {
		return channels.Inbound{}, apperr.Invalidf("body",
			"the interaction lacks its id, channel_id, application_id or token")
	}
	name := user.GlobalName
	if name == "" {
		name = user.Username
	}
	return channels.Inbound{
		ID:           in.ID,
		Conversation: in.ChannelID,
		User:         user.ID,
		UserName:     name,
		FromBot:      user.Bot,
		Reply:        channels.Target{targetApplicationID: in.AppID, targetToken: in.Token},
	}, nil
}

// answer is a Received answered resp (200, JSON) bringing msgs.
func answer(resp discordgo.InteractionResponse, msgs ...channels.Inbound) (channels.Received, error) {
	body, err := json.Marshal(resp)
	if err != nil {
		return channels.Received{}, err
	}
	return channels.Received{
		Answer:   channels.Answer{Status: http.StatusOK, ContentType: "application/json", Body: body},
		Messages: msgs,
	}, nil
}
