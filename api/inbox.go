package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/inbox"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// inboxRequest names a chat of the agent, and what an inbox action says of it.
type inboxRequest struct {
	scope
	ChatID     string `json:"chat_id"`
	OperatorID string `json:"operator_id"`
	Content    string `json:"content"`
	Note       string `json:"note"`
}

// actor is who acts in the inbox: the request's operator, or the account.
func actor(c *gin.Context) inbox.Actor {
	p := httpx.Principal(c)
	return inbox.Actor{AccountID: p.AccountID, OperatorID: p.OperatorID}
}

// listInbox lists the project's handoffs: the open ones (waiting, assigned, taken), the oldest
// request first, then the handed back and closed, the most recent first; by agent (bot_id),
// status, channel, operator_id and source.
func (s *server) listInbox(c *gin.Context) (any, error) {
	var sc scope
	page, err := s.projectPage(c, &sc)
	if err != nil {
		return nil, err
	}
	f := inbox.Filter{Status: c.Query("status"), Channel: c.Query("channel"), OperatorID: c.Query("operator_id"), Source: c.Query("source")}
	if sc.BotID != "" {
		bot, err := s.agents.Get(c, sc.ProjectID, sc.BotID)
		if err != nil {
			return nil, err
		}
		f.BotID = bot.ID
	}
	list, total, err := s.inbox.List(c, sc.ProjectID, f, page)
	return gin.H{"total": total, "handoffs": list, "pagination": page.Of(total)}, err
}

// streamInbox streams the project's handoff events (handoff.requested, .assigned, .taken,
// .released, .closed) as they happen: a ready event once the stream listens, then one handoff
// event each, the domain event's envelope as its data.
func (s *server) streamInbox(c *gin.Context) {
	var sc scope
	if err := s.project(c, &sc); err != nil {
		httpx.Fail(c, err)
		return
	}
	changes, err := s.watch(c.Request.Context(), sc.ProjectID, "handoff.>")
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	st := httpx.NewSSE(c, s.heartbeat)
	defer st.Close()
	if err := st.Event("ready", gin.H{"project_id": sc.ProjectID}); err != nil {
		return
	}
	for ev := range changes {
		if err := st.Event("handoff", ev); err != nil {
			return
		}
	}
}

// readInbox is one chat of the agent as an operator reads it: its messages (a page of them,
// oldest first) and its handoff (null when nobody asked for a person).
func (s *server) readInbox(c *gin.Context) (any, error) {
	var sc scope
	bot, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	chatID, err := idOf(c, "", "chat_id")
	if err != nil {
		return nil, err
	}
	msgs, total, err := s.chats.History(c, sc.ProjectID, bot.ID, chatID, page)
	if err != nil {
		return nil, err
	}
	var handoff *inbox.Handoff
	if h, err := s.inbox.Of(c, sc.ProjectID, bot.ID, chatID); err == nil {
		handoff = &h
	} else if !apperr.IsNotFound(err) {
		return nil, err
	}
	return gin.H{"handoff": handoff, "total": total, "conversation": msgs, "pagination": page.Of(total)}, nil
}

// inboxAction is an inbox POST: its request (the chat required), its agent and its actor.
func (s *server) inboxAction(c *gin.Context) (inboxRequest, agents.Bot, inbox.Actor, error) {
	var req inboxRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		return req, agents.Bot{}, inbox.Actor{}, err
	}
	bot, err := s.bot(c, &req.scope)
	if err != nil {
		return req, bot, inbox.Actor{}, err
	}
	if req.ChatID, err = idOf(c, req.ChatID, "chat_id"); err != nil {
		return req, bot, inbox.Actor{}, err
	}
	return req, bot, actor(c), nil
}

func (s *server) assignInbox(c *gin.Context) (any, error) {
	req, bot, a, err := s.inboxAction(c)
	if err != nil {
		return nil, err
	}
	h, err := s.inbox.Assign(c, req.ProjectID, bot.ID, req.ChatID, a, req.OperatorID)
	return gin.H{"handoff": h}, err
}

func (s *server) takeInbox(c *gin.Context) (any, error) {
	req, bot, a, err := s.inboxAction(c)
	if err != nil {
		return nil, err
	}
	h, err := s.inbox.Take(c, req.ProjectID, bot, req.ChatID, a, req.OperatorID)
	return gin.H{"handoff": h}, err
}

func (s *server) replyInbox(c *gin.Context) (any, error) {
	req, bot, a, err := s.inboxAction(c)
	if err != nil {
		return nil, err
	}
	if a.OperatorID != "" {
		// The reply is signed with the operator's name.
		op, err := s.operators.Get(c, a.AccountID, a.OperatorID)
		if err != nil {
			return nil, err
		}
		a.Name = op.Name
	}
	m, err := s.inbox.Reply(c, req.ProjectID, bot, req.ChatID, a, req.Content)
	return gin.H{"message": m}, err
}

func (s *server) noteInbox(c *gin.Context) (any, error) {
	req, bot, a, err := s.inboxAction(c)
	if err != nil {
		return nil, err
	}
	h, err := s.inbox.Note(c, req.ProjectID, bot.ID, req.ChatID, a, req.Content)
	return gin.H{"handoff": h}, err
}

func (s *server) releaseInbox(c *gin.Context) (any, error) {
	req, bot, a, err := s.inboxAction(c)
	if err != nil {
		return nil, err
	}
	h, err := s.inbox.Release(c, req.ProjectID, bot, req.ChatID, a, req.Note)
	return gin.H{"handoff": h}, err
}

func (s *server) closeInbox(c *gin.Context) (any, error) {
	req, bot, a, err := s.inboxAction(c)
	if err != nil {
		return nil, err
	}
	h, err := s.inbox.Close(c, req.ProjectID, bot, req.ChatID, a)
	return gin.H{"handoff": h}, err
}
