package httpx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Turn is what a door's request asks of an agent: a message (with the chat to add it to, or
// the conversation so far), or a decision on the tool call a run waits for.
type Turn struct {
	Input    chats.Input
	Decision *agentruns.Approval
}

// Sink is where a door streams a turn's reply: the chat's sink, told first which chat the turn
// is in.
type Sink interface {
	chats.Sink
	InChat(chatID string) error
}

// Turns carry out the doors' turns.
type Turns struct {
	Chats *chats.Service
	Runs  *agentruns.Service
	// RunWait bounds how long a run is waited for when its reply is not streamed.
	RunWait time.Duration
}

// Converse carries out a turn: a message to the agent (a reply made at once, or the agent run
// that answers it) or a decision on the call a run waits for. With a sink, the reply streams to
// it as it is made; without, a run is waited for.
func (t Turns) Converse(ctx context.Context, bot agents.Bot, asker chats.Asker, turn Turn, sink Sink) (chats.Reply, error) {
	var out chats.Outcome
	if turn.Decision != nil {
		e, err := t.Runs.Decide(ctx, bot.ProjectID, bot.ID, *turn.Decision)
		if err != nil {
			return chats.Reply{}, err
		}
		out.RunID = e.ID
	} else {
		var err error
		var chatSink chats.Sink
		if sink != nil {
			chatSink = sink
		}
		if out, err = t.Chats.Chat(ctx, bot.ProjectID, bot, asker, turn.Input, chatSink); err != nil {
			return chats.Reply{}, err
		}
	}
	if out.RunID == "" {
		return *out.Reply, nil
	}
	return t.followRun(ctx, bot, out.RunID, sink)
}

// followRun waits for the agent run id to answer or to wait for an approval, streaming its
// answer to sink as it is made when there is one. A run still going after the run wait is
// answered 504 when not streamed: an OpenAI answer has no form for one that is not over.
func (t Turns) followRun(ctx context.Context, bot agents.Bot, id string, sink Sink) (chats.Reply, error) {
	f, err := t.Runs.Open(ctx, bot.ProjectID, bot.ID, id)
	if err != nil {
		return chats.Reply{}, err
	}
	defer f.Close()
	e := f.Run
	var delta func(string) error
	wait := ctx
	if sink != nil {
		if err := sink.InChat(e.ChatID); err != nil {
			return chats.Reply{}, err
		}
		delta = sink.Delta
	} else {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, t.RunWait)
		defer cancel()
	}
	e, err = f.Follow(wait, 0, func(agentruns.Entry) error { return nil }, delta)
	if err != nil && !(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) {
		return chats.Reply{}, err
	}
	reply, err := t.Runs.Reply(ctx, e)
	if err != nil {
		return chats.Reply{}, err
	}
	if !reply.IsComplete && !reply.RequiresApprove {
		return chats.Reply{}, apperr.New(apperr.GatewayTimeout, "run_in_progress", fmt.Sprintf(
			"The agent's run %s goes on longer than this request waits; ask with stream: true to follow it, or read the chat %s later.", e.ID, reply.ChatID))
	}
	return reply, nil
}
