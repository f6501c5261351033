package api

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"

	"github.com/agentplane/agentplane/api/httpx"
	"github.com/agentplane/agentplane/shared/adapters/ratelimit"
	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

type chatRequest struct {
	scope
	chats.Input
	// Version is the agent's version to answer with (the account's own test of a draft):
	// "draft", "published" (the default) or a number.
	Version agents.VersionName `json:"version"`
}

// chat answers a message: as JSON, or as an event stream when the body says stream.
func (s *server) chat(c *gin.Context) {
	var req chatRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	bot, err := s.bot(c, &req.scope)
	if err == nil {
		err = s.agentLimit(c, bot)
	}
	if err == nil && req.Version != "" {
		bot, err = s.botAt(c, bot, req.Version)
	}
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	asker := chats.Asker{AccountID: httpx.Principal(c).AccountID}
	// The request's own context, not gin's pooled one: provider calls leave timers behind that
	// may fire as the handler returns, and gin reuses its context for the next request.
	ctx := c.Request.Context()
	var stream *httpx.SSE
	var sink chats.Sink
	if req.Stream {
		stream = httpx.NewSSE(c, s.heartbeat)
		defer stream.Close()
		sink = stream
	}
	out, err := s.chats.Chat(ctx, req.ProjectID, bot, asker, req.Input, sink)
	if err == nil && out.RunID != "" {
		f, err := s.runs.Open(ctx, req.ProjectID, bot.ID, out.RunID)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		defer f.Close()
		s.follow(c, f, 0, stream)
		return
	}
	switch {
	case err == nil && stream == nil:
		c.JSON(200, gin.H{"chat": out.Reply})
	case err == nil:
		_ = stream.Event("done", gin.H{"chat": out.Reply})
	case chats.IsDisconnect(err) && ctx.Err() != nil:
	case stream == nil || !stream.Began():
		httpx.Fail(c, err)
	default:
		_, body, _ := httpx.ErrorOf(c, err)
		_ = stream.Event("error", body)
	}
}

// follow answers with an agent run from its entry after: on st, an event stream of its entries
// (and the deltas of its answer), or, when st is nil, as the chat object once it answers, waits
// for an approval or fails, or with the steps so far when it runs longer than the wait.
func (s *server) follow(c *gin.Context, f *agentruns.Following, after int, st *httpx.SSE) {
	if st == nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), s.runWait)
		defer cancel()
		e, err := f.Follow(ctx, after, func(agentruns.Entry) error { return nil }, nil)
		if err != nil && !(errors.Is(err, context.DeadlineExceeded) && c.Request.Context().Err() == nil) {
			httpx.Fail(c, err)
			return
		}
		reply, err := s.runs.Reply(c, e)
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		c.JSON(200, gin.H{"chat": reply})
		return
	}
	_, err := f.Follow(c.Request.Context(), after, st.Entry, st.Delta)
	switch {
	case err == nil, c.Request.Context().Err() != nil:
	case !st.Began():
		httpx.Fail(c, err)
	default:
		_, body, _ := httpx.ErrorOf(c, err)
		_ = st.Event(agentruns.EventError, body)
	}
}

type runRequest struct {
	scope
	ExecutionID string `json:"execution_id"`
}

// chatStream follows an agent run as an event stream, from the entry after Last-Event-ID (or
// the query's last_event_id): what the client missed, then what comes.
func (s *server) chatStream(c *gin.Context) {
	var req runRequest
	b, err := s.bot(c, &req.scope)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	f, err := s.runs.Open(c, req.ProjectID, b.ID, c.Query("execution_id"))
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	defer f.Close()
	last := c.GetHeader("Last-Event-ID")
	if last == "" {
		last = c.Query("last_event_id")
	}
	after := 0
	if last != "" {
		if after, err = strconv.Atoi(last); err != nil || after < 0 {
			httpx.Fail(c, apperr.Invalidf("Last-Event-ID", "must be the id of an event of this stream"))
			return
		}
	}
	st := httpx.NewSSE(c, s.heartbeat)
	defer st.Close()
	st.Start()
	s.follow(c, f, after, st)
}

type approvalRequest struct {
	scope
	agentruns.Approval
	ExecutionIDAlt string `json:"execution_id"`
	Stream         bool   `json:"stream"`
}

// executeTool takes the user's decision on the tool call a run waits for, and answers with the
// run's continuation as a chat answer does.
func (s *server) executeTool(c *gin.Context) {
	var req approvalRequest
	if err := s.decoder.Decode(c, &req); err != nil {
		httpx.Fail(c, err)
		return
	}
	b, err := s.bot(c, &req.scope)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	if req.ExecutionID == "" {
		req.ExecutionID = req.ExecutionIDAlt
	}
	e, err := s.runs.Decide(c.Request.Context(), req.ProjectID, b.ID, req.Approval)
	if err != nil {
		httpx.Fail(c, err)
		return
	}
	var st *httpx.SSE
	if req.Stream {
		st = httpx.NewSSE(c, s.heartbeat)
		defer st.Close()
	}
	f := s.runs.Watching(e)
	defer f.Close()
	s.follow(c, f, len(e.Log), st)
}

// agentLimit holds the agent's own limit: ratelimit_requests per ratelimit_seconds for each
// API key, in Redis (GCRA, shared by every API replica), and says so in the X-RateLimit headers.
func (s *server) agentLimit(c *gin.Context, bot agents.Bot) error {
	state, err := s.botAllow(c, bot, httpx.Principal(c).KeyID)
	if state == nil {
		return err
	}
	c.Header("X-RateLimit-Limit", strconv.Itoa(bot.RatelimitRequests))
	c.Header("X-RateLimit-Remaining", strconv.Itoa(remaining(state.limit, state.res)))
	c.Header("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(time.Now().Add(state.res.ResetAfter).UnixMilli())/1000)), 10))
	return err
}

// botLimitState is where an agent's limit stands for one key.
type botLimitState struct {
	limit redis_rate.Limit
	res   *redis_rate.Result
}

// botAllow takes one message of the agent's limit for the key, wherever the message comes from
// (a chat request, an MCP client's chat call). Like the per-key limit it fails closed: with Redis
// down the message is refused with 503, never let through unlimited. The state is nil when the
// agent has no limit or Redis did not answer.
func (s *server) botAllow(ctx context.Context, bot agents.Bot, keyID string) (*botLimitState, error) {
	limit, res, err := ratelimit.New(s.limiter).Allow(ctx, bot, keyID)
	if limit == nil {
		return nil, err
	}
	return &botLimitState{limit: *limit, res: res}, err
}

func (s *server) chatHistory(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	msgs, total, err := s.chats.History(c, sc.ProjectID, b.ID, c.Query("chat_id"), page)
	return gin.H{"total": total, "conversation": msgs, "pagination": page.Of(total)}, err
}

func (s *server) listChats(c *gin.Context) (any, error) {
	var sc scope
	b, page, err := s.botPage(c, &sc)
	if err != nil {
		return nil, err
	}
	list, total, err := s.chats.List(c, sc.ProjectID, b.ID, page)
	return gin.H{"total": total, "chats": list, "pagination": page.Of(total)}, err
}

func (s *server) deleteChat(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.chats.Delete(c, sc.ProjectID, b.ID, c.Query("chat_id"))
}

type voteRequest struct {
	scope
	chats.VoteInput
}

func (s *server) voteMessage(c *gin.Context) (any, error) {
	var req voteRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	st, err := s.chats.Vote(c, req.ProjectID, botID, req.VoteInput)
	return gin.H{"vote": st}, err
}

func (s *server) voteStatus(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	st, err := s.chats.VoteOf(c, sc.ProjectID, b.ID, chats.VoteInput{MessageID: c.Query("message_id"), VoterID: c.Query("voter_id"), VoterType: c.Query("voter_type")})
	return gin.H{"vote": st}, err
}

func (s *server) deleteMessage(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.chats.DeleteMessage(c, sc.ProjectID, b.ID, c.Query("message_id"))
}

type chatSettingRequest struct {
	scope
	ChatID string `json:"chat_id"`
	Name   string `json:"name"`
	Mode   string `json:"mode"`
}

func (s *server) renameChat(c *gin.Context) (any, error) {
	var req chatSettingRequest
	botID, err := s.bindID(c, &req, &req.scope, &req.ChatID, "chat_id")
	if err != nil {
		return nil, err
	}
	chat, err := s.chats.Rename(c, req.ProjectID, botID, req.ChatID, req.Name)
	return gin.H{"chat": chat}, err
}

func (s *server) setChatMode(c *gin.Context) (any, error) {
	var req chatSettingRequest
	botID, err := s.bindID(c, &req, &req.scope, &req.ChatID, "chat_id")
	if err != nil {
		return nil, err
	}
	chat, err := s.chats.SetMode(c, req.ProjectID, botID, req.ChatID, req.Mode)
	return gin.H{"chat": chat}, err
}
