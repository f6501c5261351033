package api

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/apperr"
	"github.com/agentplane/agentplane/shared/chats"
)

type chatRequest struct {
	scope
	chats.Input
}

// chat answers a message: as JSON, or as an event stream when the body says stream.
func (s *server) chat(c *gin.Context) {
	var req chatRequest
	if err := s.decode(c, &req); err != nil {
		fail(c, err)
		return
	}
	bot, err := s.bot(c, &req.scope)
	if err == nil {
		err = s.agentLimit(c, bot)
	}
	if err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	asker := chats.Asker{AccountID: p.AccountID}
	if !req.Stream {
		reply, err := s.chats.Reply(c, req.ProjectID, bot, asker, req.Input, nil)
		if err != nil {
			fail(c, err)
			return
		}
		c.JSON(200, gin.H{"chat": reply})
		return
	}
	stream := newSSE(c, s.heartbeat)
	defer stream.close()
	reply, err := s.chats.Reply(c, req.ProjectID, bot, asker, req.Input, stream)
	switch {
	case err == nil:
		_ = stream.event("done", gin.H{"chat": reply})
	case chats.IsDisconnect(err) && c.Request.Context().Err() != nil:
	case !stream.began():
		fail(c, err)
	default:
		_, body, _ := errorOf(c, err)
		_ = stream.event("error", body)
	}
}

// agentLimit holds the agent's own limit: ratelimit_requests per ratelimit_seconds for each
// API key, in Redis (GCRA, shared by every API replica). Like the per-key limit it fails
// closed: with Redis down the request is answered 503, never let through unlimited.
func (s *server) agentLimit(c *gin.Context, bot agents.Bot) error {
	if bot.RatelimitRequests <= 0 || bot.RatelimitSeconds <= 0 {
		return nil
	}
	limit := redis_rate.Limit{Rate: bot.RatelimitRequests, Burst: bot.RatelimitRequests, Period: time.Duration(bot.RatelimitSeconds) * time.Second}
	res, err := s.limiter.Allow(c, "ratelimit:bot:"+bot.ID+":"+principal(c).KeyID, limit)
	if err != nil {
		return apperr.Unavailablef("redis", err)
	}
	c.Header("X-RateLimit-Limit", strconv.Itoa(bot.RatelimitRequests))
	c.Header("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	c.Header("X-RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(time.Now().Add(res.ResetAfter).UnixMilli())/1000)), 10))
	if res.Allowed > 0 {
		return nil
	}
	retry := max(int(math.Ceil(res.RetryAfter.Seconds())), 1)
	msg := bot.RatelimitMessage
	if msg == "" {
		msg = fmt.Sprintf("This agent answers at most %d messages every %d seconds; retry in %d s.", bot.RatelimitRequests, bot.RatelimitSeconds, retry)
	}
	return &apperr.Error{Kind: apperr.RateLimited, Code: "bot_rate_limited", RetryAfter: retry, Message: msg}
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
