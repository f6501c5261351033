package chats

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/tasks"
)

// EndUsers keeps what end users tell an agent about themselves (shared/usermemory implements
// it): a turn's prompt (a standard reply's, or each model call's of an agent run) gets what is
// known of its user, and its message is queued for extraction once answered.
type EndUsers interface {
	// Recall is the prompt section of what is known about the user that bears on the question
	// ("" when nothing is).
	Recall(ctx context.Context, projectID, botID, userUUID, question string) (string, error)
	// Heard queues the extraction of what a user's message says about them.
	Heard(ctx context.Context, p tasks.MemoryExtractPayload) error
}

// UseEndUsers gives the service the end users' memories. The composition root calls it once
// both exist.
func (s *Service) UseEndUsers(u EndUsers) { s.users = u }

// remembers reports whether turns of bot asked with in use their user's memories: the agent's
// memory flag is on and the request did not turn memory off.
func (s *Service) remembers(bot agents.Bot, in Input) bool {
	return s.users != nil && bot.Memory != 0 && (in.Memory == nil || *in.Memory)
}

// Recall is what is known of the turn's user for its prompt (Preamble). A store that cannot be
// read leaves it out: the turn is answered without it.
func (s *Service) Recall(ctx context.Context, t Turn) string {
	if t.EndUser == "" {
		return ""
	}
	known, err := s.users.Recall(ctx, t.ProjectID, t.Bot.ID, t.EndUser, t.Question())
	if err != nil {
		s.log.Warn("user memories not read; answering without them", "bot_id", t.Bot.ID, "error", err)
	}
	return known
}

// Heard queues the extraction of the turn's message once it is answered. A queue that is down
// loses it (logged), never the reply.
func (s *Service) Heard(ctx context.Context, t Turn) {
	if t.EndUser == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err := s.users.Heard(ctx, tasks.MemoryExtractPayload{ProjectID: t.ProjectID, BotID: t.Bot.ID, UserUUID: t.EndUser, MessageID: t.User.UUID,
		Text: t.Question(), Model: t.User.Preference.Model, ProviderHost: t.Input.ProviderHost, ProviderKey: t.Input.ProviderKey})
	if err != nil {
		s.log.Warn("user memory extraction not queued", "bot_id", t.Bot.ID, "message_id", t.User.UUID, "error", err)
	}
}
