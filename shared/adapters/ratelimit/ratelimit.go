// Package ratelimit is agents' own rate limit (ratelimit_requests every ratelimit_seconds) in
// Redis, one budget per agent and sender across every process, whichever door a message comes
// in by: the API, the end users' page, a messaging platform.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Agents takes messages of agents' limits.
type Agents struct{ limiter *redis_rate.Limiter }

// New returns the agents' limits kept by limiter.
func New(limiter *redis_rate.Limiter) Agents { return Agents{limiter: limiter} }

// Allow takes one message of bot's limit for the sender key. It fails closed: with Redis down
// the message is refused (Unavailable), never let through unlimited. A refusal is RateLimited
// bot_rate_limited, with the agent's message and when to retry. The limit and the result are
// nil when the agent has no limit or Redis did not answer.
func (a Agents) Allow(ctx context.Context, bot agents.Bot, key string) (*redis_rate.Limit, *redis_rate.Result, error) {
	if bot.RatelimitRequests <= 0 || bot.RatelimitSeconds <= 0 {
		return nil, nil, nil
	}
	limit := redis_rate.Limit{Rate: bot.RatelimitRequests, Burst: bot.RatelimitRequests, Period: time.Duration(bot.RatelimitSeconds) * time.Second}
	res, err := a.limiter.Allow(ctx, "ratelimit:bot:"+bot.ID+":"+key, limit)
	if err != nil {
		return nil, nil, apperr.Unavailablef("redis", err)
	}
	if res.Allowed > 0 {
		return &limit, res, nil
	}
	retry := max(int(math.Ceil(res.RetryAfter.Seconds())), 1)
	msg := bot.RatelimitMessage
	if msg == "" {
		msg = fmt.Sprintf("This agent answers at most %d messages every %d seconds; retry in %d s.", bot.RatelimitRequests, bot.RatelimitSeconds, retry)
	}
	return &limit, res, &apperr.Error{Kind: apperr.RateLimited, Code: "bot_rate_limited", RetryAfter: retry, Message: msg}
}
