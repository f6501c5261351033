package channels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/subscribers"
	"github.com/agentplane/agentplane/shared/tasks"
)

// MessageEvent is the data of a channel's events: the connection, the conversation's chat,
// the platform's user and the text (a failure's error besides).
type MessageEvent struct {
	ConnectionID string `json:"connection_id"`
	ChannelType  string `json:"channel_type"`
	ChatID       string `json:"chat_id,omitempty"`
	User         string `json:"user,omitempty"`
	UserName     string `json:"user_name,omitempty"`
	Text         string `json:"text"`
	Error        string `json:"error,omitempty"`
}

var messageEvents = outbox.Declare[MessageEvent](outbox.ChannelMessageReceived, outbox.ChannelMessageSent, outbox.ChannelFailed)

// Receive takes a webhook call of the connection id of type typ: the platform checks its
// signature and reads it; each message it brings (not a bot's) is kept, once whatever the
// retries, and queued to be answered. It returns what to answer the platform at once. A
// connection deleted, paused or of an agent that is not active runs nothing (NotFound).
func (s *Service) Receive(ctx context.Context, typ, id string, r Request) (Answer, error) {
	c, err := s.repo.Find(ctx, id)
	if err == nil && c.Type != typ {
		err = apperr.NotFoundf(Resource)
	}
	if err != nil {
		return Answer{}, err
	}
	if c.Status == StatusPaused {
		return Answer{}, apperr.New(apperr.NotFound, "channel_paused", "This channel connection is paused.")
	}
	bot, err := s.svc.Agents.Find(ctx, c.BotID)
	if err == nil && !bot.Active() {
		err = apperr.New(apperr.NotFound, "agent_inactive", "The agent of this channel connection is not active.")
	}
	if err != nil {
		return Answer{}, err
	}
	creds, err := s.open(c)
	if err != nil {
		return Answer{}, err
	}
	got, err := s.platforms[c.Type].Receive(ctx, link(c, creds), r)
	if err != nil {
		return Answer{}, err
	}
	for _, in := range got.Messages {
		if in.FromBot || in.ID == "" || (in.Decision == nil && strings.TrimSpace(in.Text) == "") {
			continue
		}
		if err := s.take(ctx, c, in); err != nil {
			return Answer{}, err
		}
	}
	return got.Answer, nil
}

// take keeps in, unless it was taken before, and queues its answer unless it was answered.
func (s *Service) take(ctx context.Context, c Connection, in Inbound) error {
	text := in.Text
	if utf8.RuneCountInString(text) > MaxInboundText {
		text = string([]rune(text)[:MaxInboundText])
	}
	m := Message{ID: messageID(c.ID, in.ID), ProjectID: c.ProjectID, BotID: c.BotID, ConnectionID: c.ID, Type: c.Type, PlatformID: in.ID,
		Conversation: in.Conversation, User: in.User, UserName: in.UserName, Text: text, Decision: in.Decision, Reply: in.Reply,
		Status: MessageReceived, ReceivedAt: s.now()}
	ev := messageEvents.New(ctx, outbox.ChannelMessageReceived, c.ProjectID, c.BotID,
		MessageEvent{ConnectionID: c.ID, ChannelType: c.Type, User: in.User, UserName: in.UserName, Text: text})
	kept, fresh, err := s.repo.Take(ctx, m, ev)
	if err != nil {
		return err
	}
	if fresh {
		s.events.Dispatch(ctx, outbox.Ref{Resource: MessageResource, ID: m.ID}, ev)
		s.svc.Counted(c.Type, CountReceived)
	}
	if kept.Status != MessageReceived {
		return nil
	}
	return s.queue.Enqueue(ctx, tasks.NewChannelAnswerTask(kept.ID))
}

// messageID is the id of the message the platform calls platformID on the connection.
func messageID(connectionID, platformID string) string {
	sum := sha256.Sum256([]byte(connectionID + "\x00" + platformID))
	return hex.EncodeToString(sum[:16])
}

// Answer answers the message id taken from a channel: a decision on a run's tool call, or a
// turn of the conversation's chat, in the agent's reasoning mode, as the platform's user. A
// reply made at once is sent; a run's answer is sent when the run stops (Settle). A message
// answered before is not answered again. On the final attempt (final), a failure of ours (the
// provider or the store down) is told to the user rather than left unanswered.
func (s *Service) Answer(ctx context.Context, id string, final bool) error {
	m, err := s.repo.Message(ctx, id)
	if err != nil || m.Status != MessageReceived {
		return ignoreGone(err)
	}
	c, err := s.repo.Find(ctx, m.ConnectionID)
	var bot agents.Bot
	if err == nil {
		bot, err = s.svc.Agents.Find(ctx, c.BotID)
	}
	if apperr.IsNotFound(err) || (err == nil && (c.Status == StatusPaused || !bot.Active())) {
		return s.repo.SetMessage(ctx, m.ID, MessageDropped, "")
	}
	if err != nil {
		return err
	}
	thread, err := s.repo.Thread(ctx, threadID(c.ID, m.Conversation))
	if err != nil && !apperr.IsNotFound(err) {
		return err
	}
	if m.Decision != nil {
		return s.decide(ctx, c, bot, m, thread)
	}
	sub, err := s.svc.Subscribers.OfPlatform(ctx, bot, c.Type+":"+m.User, m.UserName)
	if err != nil {
		return err
	}
	err = s.svc.Limit(ctx, bot, "subscriber:"+sub.ID)
	if err == nil {
		err = s.turn(ctx, c, bot, m, thread, sub)
	}
	var failure *apperr.Error
	if errors.As(err, &failure) && !apperr.Passing(failure) {
		return s.refuse(ctx, c, m, thread, failure)
	}
	if err != nil && final {
		return errors.Join(err, s.refuse(ctx, c, m, thread, apperr.New(apperr.Unavailable, "answer_failed",
			"Sorry, the agent could not answer this time; please write again in a while.")))
	}
	return err
}

// turn answers m, the platform user sub's message, in the conversation's chat (a new one when
// it has none, or its chat was deleted).
func (s *Service) turn(ctx context.Context, c Connection, bot agents.Bot, m Message, thread Thread, sub subscribers.Subscriber) error {
	asker := chats.Asker{AccountID: sub.ID, Name: sub.Name, Subscriber: sub.ID}
	text := m.Text
	in := chats.Input{Message: &text, ChatID: thread.ChatID, ReasoningMode: bot.ReasoningType, RunID: runPrefix + m.ID, Origin: Origin, Channel: c.Type}
	if chats.Mode(in) == chats.ModeAgent {
		if e, err := s.svc.Runs.Get(ctx, c.ProjectID, bot.ID, in.RunID); err == nil {
			// A retry of a turn whose run was started: the run answers when it stops.
			return s.repo.SetMessage(ctx, m.ID, MessageAnswered, e.ChatID)
		} else if !apperr.IsNotFound(err) {
			return err
		}
	}
	known := thread
	thread = Thread{ID: threadID(c.ID, m.Conversation), ConnectionID: c.ID, Conversation: m.Conversation, ChatID: thread.ChatID, Reply: m.Reply, UpdatedAt: s.now()}
	out, err := s.svc.Chats.Chat(ctx, c.ProjectID, bot, asker, in, nil)
	if apperr.IsNotFound(err) && in.ChatID != "" {
		// The conversation's chat was deleted: the conversation goes on in a new one.
		in.ChatID = ""
		out, err = s.svc.Chats.Chat(ctx, c.ProjectID, bot, asker, in, nil)
	}
	if err != nil {
		return err
	}
	var chatID string
	if out.Reply != nil {
		chatID = out.Reply.ChatID
	} else {
		e, err := s.svc.Runs.Get(ctx, c.ProjectID, bot.ID, out.RunID)
		if err != nil {
			return err
		}
		chatID = e.ChatID
	}
	if in.ChatID == "" {
		if err := s.svc.Subscribers.ChatStarted(ctx, sub); err != nil {
			return err
		}
	}
	if known.ChatID != chatID || !maps.Equal(known.Reply, thread.Reply) {
		thread.ChatID = chatID
		if err := s.repo.PutThread(ctx, thread); err != nil {
			return err
		}
	}
	if out.Reply != nil && out.Reply.Type != chats.KindHuman {
		if err := s.queueSend(ctx, c, Send{ID: "reply-" + m.ID, ChatID: chatID, To: m.Reply, Text: out.Reply.WithLinks()}); err != nil {
			return err
		}
	}
	return s.repo.SetMessage(ctx, m.ID, MessageAnswered, chatID)
}

// refuse tells the platform's user why their message was not answered (the agent's rate limit,
// a message too long): a failure of theirs or the agent's, not one a retry mends.
func (s *Service) refuse(ctx context.Context, c Connection, m Message, thread Thread, failure *apperr.Error) error {
	if err := s.queueSend(ctx, c, Send{ID: "reply-" + m.ID, ChatID: thread.ChatID, To: m.Reply, Text: failure.Message}); err != nil {
		return err
	}
	return s.repo.SetMessage(ctx, m.ID, MessageAnswered, thread.ChatID)
}

// decide carries out a click on an approval button: only on a run of the conversation's own
// chat, whoever clicked in the conversation (the agent lets its channel's users approve by
// offering them the buttons).
func (s *Service) decide(ctx context.Context, c Connection, bot agents.Bot, m Message, thread Thread) error {
	e, err := s.svc.Runs.Get(ctx, c.ProjectID, bot.ID, m.Decision.ExecutionID)
	if err == nil && (thread.ChatID == "" || e.ChatID != thread.ChatID) {
		err = apperr.NotFoundf(agentruns.Resource)
	}
	if err == nil {
		// The run's answer goes where the click was made (a Discord click has a token of its own).
		thread.Reply, thread.UpdatedAt = m.Reply, s.now()
		err = s.repo.PutThread(ctx, thread)
	}
	if err == nil {
		approve := m.Decision.Approve
		_, err = s.svc.Runs.Decide(ctx, c.ProjectID, bot.ID, agentruns.Approval{ExecutionID: e.ID, Approve: &approve})
	}
	if err != nil && !apperr.Passing(apperr.As(err)) {
		// A decided run, another's, or one gone: the click changes nothing.
		return s.repo.SetMessage(ctx, m.ID, MessageDropped, thread.ChatID)
	}
	if err != nil {
		return err
	}
	return s.repo.SetMessage(ctx, m.ID, MessageAnswered, thread.ChatID)
}

// Post delivers text, a message the agent wrote (a workflow's send_message), to the
// conversation whose chat is chatID on the agent's connection channelID, once per key.
func (s *Service) Post(ctx context.Context, projectID, botID, channelID, chatID, text, key string) error {
	c, err := s.repo.Get(ctx, projectID, botID, channelID)
	if err != nil {
		return err
	}
	thread, err := s.repo.ThreadByChat(ctx, chatID)
	if apperr.IsNotFound(err) || (err == nil && thread.ConnectionID != c.ID) {
		return apperr.New(apperr.NotFound, "channel_conversation_not_found", "The chat "+chatID+" is no conversation of this channel.")
	}
	if err != nil {
		return err
	}
	return s.queueSend(ctx, c, Send{ID: "post-" + messageID(c.ID, key), ChatID: chatID, To: thread.Reply, Text: text})
}

// ToChat delivers text, a person's answer in the agent's place, to the conversation whose chat
// is chatID, when the chat is one of the agent's channels' conversations, once per key; a chat
// of no channel is left as it is.
func (s *Service) ToChat(ctx context.Context, projectID, botID, chatID, text, key string) error {
	thread, err := s.repo.ThreadByChat(ctx, chatID)
	if apperr.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c, err := s.repo.Get(ctx, projectID, botID, thread.ConnectionID)
	if err != nil {
		return ignoreGone(err)
	}
	return s.queueSend(ctx, c, Send{ID: "post-" + messageID(c.ID, key), ChatID: chatID, To: thread.Reply, Text: text})
}

// Settle sends a channel's run's answer to the conversation it answers once the run stops:
// its reply, the approval it waits for (with the platform's buttons), or why it failed. Runs
// of other origins are not a channel's.
func (s *Service) Settle(ctx context.Context, e agentruns.Execution) error {
	if e.Origin != Origin || !strings.HasPrefix(e.ID, runPrefix) {
		return nil
	}
	m, err := s.repo.Message(ctx, strings.TrimPrefix(e.ID, runPrefix))
	if err != nil {
		return ignoreGone(err)
	}
	c, err := s.repo.Find(ctx, m.ConnectionID)
	if err != nil {
		return ignoreGone(err)
	}
	to := m.Reply
	if thread, err := s.repo.Thread(ctx, threadID(c.ID, m.Conversation)); err == nil && thread.ChatID == e.ChatID {
		to = thread.Reply
	} else if err != nil && !apperr.IsNotFound(err) {
		return err
	}
	send := Send{ID: fmt.Sprintf("run-%s-%d", e.ID, len(e.Log)), ChatID: e.ChatID, To: to}
	switch e.Status {
	case agentruns.StatusFailed:
		send.Text = "Sorry, the agent could not answer this time."
		if n := len(e.Log); n > 0 {
			if f := agentruns.FailureOf(e.Log[n-1]); f.Message != "" {
				send.Text = "Sorry, the agent could not answer: " + f.Message
			}
		}
	default:
		reply, err := s.svc.Runs.Reply(ctx, e)
		if err != nil {
			return err
		}
		if reply.RequiresApprove && reply.Tool != nil {
			// The platform's approval message says what the run waits for.
			send.Approval = &Approval{ExecutionID: e.ID, Tool: reply.Tool.Name}
		} else {
			send.Text = reply.WithLinks()
		}
	}
	return s.queueSend(ctx, c, send)
}

// runPrefix begins the ids of the runs that answer channels' messages, followed by the
// message's id: a retried turn finds its run, and a stopped run its message.
const runPrefix = "ch-"

// threadID is the id of the connection's conversation's thread.
func threadID(connectionID, conversation string) string {
	return messageID(connectionID, "thread\x00"+conversation)
}

// ignoreGone is err, unless it says what it looked for is gone: then nothing is left to do.
func ignoreGone(err error) error {
	if apperr.IsNotFound(err) {
		return nil
	}
	return err
}

// queueSend keeps send for c's platform and delivers it at once, where the answer was made;
// what the platform does not take now is left to the queue (after the time the platform asked
// for), and an answer kept before (a retried turn) is the queue's alone.
func (s *Service) queueSend(ctx context.Context, c Connection, send Send) error {
	now := s.now()
	send.ProjectID, send.BotID, send.ConnectionID, send.Status, send.CreatedAt, send.UpdatedAt = c.ProjectID, c.BotID, c.ID, SendPending, now, now
	fresh, err := s.repo.QueueSend(ctx, send)
	if err != nil {
		return err
	}
	task := tasks.NewChannelSendTask(send.ID)
	if !fresh {
		return s.queue.Enqueue(ctx, task)
	}
	later, err := s.deliver(ctx, c, send, false)
	switch {
	case err != nil:
		// A failure of ours (the store, the credentials) is the queue's to try again.
		return s.queue.Enqueue(ctx, task)
	case later != nil:
		task.After = later.After
		return s.queue.Enqueue(ctx, task)
	}
	return nil
}

// Deliver sends the answer id through its connection's platform. A platform that asks to be
// called later is (a RetryLater error, which the queue retries after the time it asked, up to
// its attempts; final says this is the last); one that refuses it for good fails it: the
// connection's status says so, and a channel.failed event is published.
func (s *Service) Deliver(ctx context.Context, id string, final bool) error {
	send, err := s.repo.Send(ctx, id)
	if err != nil || send.Status != SendPending {
		return ignoreGone(err)
	}
	c, err := s.repo.Find(ctx, send.ConnectionID)
	if apperr.IsNotFound(err) {
		send.Status, send.Error = SendFailed, "the connection was deleted"
		return s.repo.SetSend(ctx, send, outbox.Event{})
	}
	if err != nil {
		return err
	}
	later, err := s.deliver(ctx, c, send, final)
	if err == nil && later != nil {
		return later
	}
	return err
}

// deliver makes an attempt at send through c's platform: taken, it is sent (channel.message.sent);
// refused for now and final not set, the platform's RetryLater is returned with the pieces it
// took kept; refused for good (or for now on the final attempt), it is failed
// (channel.failed, the connection's status error). An error is a failure of ours.
func (s *Service) deliver(ctx context.Context, c Connection, send Send, final bool) (*RetryLater, error) {
	creds, err := s.open(c)
	if err != nil {
		return nil, err
	}
	send.Attempts++
	err = s.platforms[c.Type].Send(ctx, link(c, creds), Outgoing{To: send.To, Text: send.Text, Approval: send.Approval, Sent: send.Pieces})
	data := MessageEvent{ConnectionID: c.ID, ChannelType: c.Type, ChatID: send.ChatID, Text: send.Text}
	if err == nil {
		send.Status, send.UpdatedAt = SendSent, s.now()
		ev := messageEvents.New(ctx, outbox.ChannelMessageSent, c.ProjectID, c.BotID, data)
		if err := s.repo.SetSend(ctx, send, ev); err != nil {
			return nil, err
		}
		s.events.Dispatch(ctx, outbox.Ref{Resource: SendResource, ID: send.ID}, ev)
		s.svc.Counted(c.Type, CountSent)
		if c.Status == StatusError {
			return nil, s.repo.SetStatus(ctx, c.ID, StatusActive, "", s.now())
		}
		return nil, nil
	}
	var later *RetryLater
	if errors.As(err, &later) {
		send.Pieces = max(send.Pieces, later.Sent)
	}
	if later != nil && !final {
		s.svc.Counted(c.Type, CountRetried)
		send.UpdatedAt = s.now()
		return later, s.repo.SetSend(ctx, send, outbox.Event{})
	}
	send.Status, send.Error, send.UpdatedAt = SendFailed, bounded(err.Error()), s.now()
	data.Error = send.Error
	ev := messageEvents.New(ctx, outbox.ChannelFailed, c.ProjectID, c.BotID, data)
	if err := s.repo.SetSend(ctx, send, ev); err != nil {
		return nil, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: SendResource, ID: send.ID}, ev)
	s.svc.Counted(c.Type, CountFailed)
	return nil, s.failed(ctx, c, err)
}
