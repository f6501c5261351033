package api

import (
	"github.com/gin-gonic/gin"
)

// listSubscribers lists the project's end users (of one agent with bot_id), the most recently
// seen first.
func (s *server) listSubscribers(c *gin.Context) (any, error) {
	var sc scope
	page, err := s.projectPage(c, &sc)
	if err != nil {
		return nil, err
	}
	botID := ""
	if sc.BotID != "" {
		bot, err := s.agents.Get(c, sc.ProjectID, sc.BotID)
		if err != nil {
			return nil, err
		}
		botID = bot.ID
	}
	subs, total, err := s.subscribers.List(c, sc.ProjectID, botID, page)
	return gin.H{"total": total, "subscribers": subs, "pagination": page.Of(total)}, err
}

// newSSOSecret makes the agent a new SSO secret and answers it, this once.
func (s *server) newSSOSecret(c *gin.Context) (any, error) {
	var sc scope
	if err := s.decoder.Decode(c, &sc); err != nil {
		return nil, err
	}
	bot, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	secret, err := s.subscribers.NewSSOSecret(c, bot)
	return gin.H{"sso_secret": secret}, err
}
