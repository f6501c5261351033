package chats

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/tasks"
)

// OnlineEvals grade a share of agents' live answers (shared/evals implements it).
type OnlineEvals interface {
	// Sampled queues the grading of a live answer.
	Sampled(ctx context.Context, p tasks.OnlineEvalPayload) error
}

// UseOnlineEvals gives the service the online grading. The composition root calls it once both
// exist.
func (s *Service) UseOnlineEvals(o OnlineEvals) { s.online = o }

// Sample queues the grading of the turn's answer (a standard one, or an agent run's) when the
// agent grades live answers and the answer's message id falls in its rate (agents.InShare): the
// same answer is always sampled the same way, and queued once (the task's id is the message's).
// A queue that is down loses it (logged), never the reply.
func (s *Service) Sample(ctx context.Context, t Turn, answer Message) {
	o := t.Bot.OnlineEval
	if s.online == nil || o == nil || !agents.InShare(answer.UUID, o.Rate) {
		return
	}
	criteria, err := json.Marshal(o.Criteria)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		err = s.online.Sampled(ctx, tasks.OnlineEvalPayload{ProjectID: t.ProjectID, BotID: t.Bot.ID, ChatID: t.Chat.UUID, MessageID: answer.UUID,
			Version: answer.Version, Answer: answer.Content, At: answer.CreatedAt, Criteria: criteria})
	}
	if err != nil {
		s.log.Warn("online grading not queued", "bot_id", t.Bot.ID, "message_id", answer.UUID, "error", err)
	}
}
