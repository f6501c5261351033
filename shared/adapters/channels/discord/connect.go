package discord

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// askCommand is the global slash command Connect registers: /ask with a required question.
func askCommand() discordgo.ApplicationCommand {
	return discordgo.ApplicationCommand{
		Name:        CommandName,
		Description: "Ask the agent",
		Type:        discordgo.ChatApplicationCommand,
		Options: []*discordgo.ApplicationCommandOption{{
			Type:        discordgo.ApplicationCommandOptionString,
			Name:        QuestionOption,
			Description: "Your question",
			Required:    true,
		}},
	}
}

// Connect checks the credentials against the bot's application (its id and public key) and
// registers the global /ask command (Discord replaces a command of the same name).
func (p *Platform) Connect(ctx context.Context, l channels.Link) error {
	token, appID := l.Credentials[credBotToken], l.Credentials[credApplicationID]
	if token == "" {
		return apperr.Invalidf(credBotToken, "it is required (Bot > Token)")
	}
	if appID == "" {
		return apperr.Invalidf(credApplicationID, "it is required (General Information > Application ID)")
	}
	if _, err := publicKey(l.Credentials); err != nil {
		return err
	}
	base := apiBase(l)
	var app discordgo.Application
	if err := p.call(ctx, "reading the bot's application", http.MethodGet, base+"/applications/@me", token, nil, &app); err != nil {
		return refused(err)
	}
	if app.ID != appID {
		return apperr.Invalidf(credApplicationID, "the bot token belongs to another application (%s)", app.ID)
	}
	if !strings.EqualFold(app.VerifyKey, strings.TrimSpace(l.Credentials[credPublicKey])) {
		return apperr.Invalidf(credPublicKey, "it is not the application's public key (General Information > Public Key)")
	}
	cmd := askCommand()
	endpoint := base + "/applications/" + url.PathEscape(appID) + "/commands"
	return refused(p.call(ctx, "registering the /"+CommandName+" command", http.MethodPost, endpoint, token, cmd, nil))
}

// refused turns Discord's refusal of the bot token (401) into an error about that credential.
func refused(err error) error {
	var apiErr *apiError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusUnauthorized {
		return apperr.Invalidf(credBotToken, "Discord refused it (%s)", apiErr.Message)
	}
	return err
}
