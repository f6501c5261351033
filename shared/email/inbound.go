package email

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/markdown"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Event is the data of the inboxes' events: the email, its thread's chat, who wrote to whom,
// the subject and the text (cut to MaxEventText), and what failed (email.failed).
type Event struct {
	EmailID string `json:"email_id"`
	ChatID  string `json:"chat_id,omitempty"`
	From    string `json:"from"`
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
	Error   string `json:"error,omitempty"`
}

// MaxEventText bounds the text an event carries.
const MaxEventText = 4000

var emailEvents = outbox.Declare[Event](outbox.EmailReceived, outbox.EmailReplied, outbox.EmailFailed)

// Mailboxes is what the SMTP listener calls.
var _ Mailboxes = (*Service)(nil)

// runPrefix begins the ids of the runs that answer emails, followed by the email's id.
const runPrefix = "em-"

// Accepts reports whether local is an active agent's address.
func (s *Service) Accepts(ctx context.Context, local string) error {
	_, _, err := s.mailbox(ctx, strings.ToLower(local))
	return err
}

// mailbox returns the settings and the agent of the address local: NotFound when it is no
// active agent's.
func (s *Service) mailbox(ctx context.Context, local string) (Settings, agents.Bot, error) {
	st, err := s.repo.ByAddress(ctx, local)
	if apperr.IsNotFound(err) {
		st, err = s.byDefault(ctx, local)
	}
	if err != nil {
		return Settings{}, agents.Bot{}, err
	}
	bot, err := s.svc.Agents.Find(ctx, st.BotID)
	if err == nil && !bot.Active() {
		err = apperr.New(apperr.NotFound, "agent_inactive", "The agent of this address is not active.")
	}
	return st, bot, err
}

// unknown is the error of an address that is no agent's.
func unknown() error {
	return apperr.New(apperr.NotFound, "email_address_unknown", "No agent has this address.")
}

// byDefault returns the settings of the agent whose default address (its subdomain, else its
// id) local is, when it has none kept yet.
func (s *Service) byDefault(ctx context.Context, local string) (Settings, error) {
	if checkLocal(local) != "" {
		return Settings{}, unknown()
	}
	bot, err := s.svc.Agents.BySubdomain(ctx, local)
	if apperr.IsNotFound(err) {
		bot, err = s.svc.Agents.Find(ctx, local)
	}
	if apperr.IsNotFound(err) {
		return Settings{}, unknown()
	}
	if err != nil {
		return Settings{}, err
	}
	st, err := s.repo.Settings(ctx, bot.ID)
	if apperr.IsNotFound(err) {
		st, err = s.provision(ctx, bot)
	}
	if err == nil && st.Address != local {
		err = unknown()
	}
	return st, err
}

// Deliver keeps m for each agent it is addressed to, once whatever the retries (by its
// Message-ID, per agent), and queues its answer. Recipients of no agent are passed over.
func (s *Service) Deliver(ctx context.Context, m Inbound) error {
	seen := map[string]bool{}
	for _, rcpt := range m.Recipients {
		at := strings.LastIndexByte(rcpt, '@')
		if at < 0 || !strings.EqualFold(rcpt[at+1:], s.domain) {
			continue
		}
		st, bot, err := s.mailbox(ctx, strings.ToLower(rcpt[:at]))
		if apperr.IsNotFound(err) || seen[bot.ID] {
			continue
		}
		if err != nil {
			return err
		}
		seen[bot.ID] = true
		if err := s.keep(ctx, st, bot, m); err != nil {
			return err
		}
	}
	return nil
}

// keep keeps m in bot's inbox unless it was kept before, and queues its answer unless it was
// handled.
func (s *Service) keep(ctx context.Context, st Settings, bot agents.Bot, m Inbound) error {
	now := s.now()
	from := strings.ToLower(strings.TrimSpace(m.From.Address))
	e := Email{ID: inboundID(bot.ID, m), ProjectID: bot.ProjectID, BotID: bot.ID, Direction: DirectionIn,
		MessageID: m.MessageID, InReplyTo: m.InReplyTo, References: m.References,
		From: m.From, To: append([]Address{}, m.To...), Cc: m.Cc, ReplyTo: m.ReplyTo, FromAddress: from, ToAddress: st.Address + "@" + s.domain,
		Subject: m.Subject, TextBody: cut(m.Text, MaxText), HTMLBody: cut(m.HTML, MaxHTML), Attachments: kept(m.Attachments),
		AuthenticationResults: m.AuthenticationResults, Automatic: m.Automatic, Size: m.Size, Status: StatusReceived,
		ThreadKey: threadKey(from, m.Subject), CreatedAt: now, UpdatedAt: now}
	ev := emailEvents.New(ctx, outbox.EmailReceived, bot.ProjectID, bot.ID, eventOf(e))
	kept, fresh, err := s.repo.Take(ctx, e, ev)
	if err != nil {
		return err
	}
	if fresh {
		s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: e.ID}, ev)
	}
	if kept.Status != StatusReceived {
		return nil
	}
	return s.queue.Enqueue(ctx, tasks.NewEmailAnswerTask(kept.ID))
}

// inboundID is the id of m in the agent's inbox: of its Message-ID, else of what it says.
func inboundID(botID string, m Inbound) string {
	key := "id\x00" + m.MessageID
	if m.MessageID == "" {
		key = fmt.Sprint("content\x00", m.From.Address, "\x00", m.Date.Unix(), "\x00", m.Subject, "\x00", m.Text)
	}
	return hashOf(botID, key)
}

func hashOf(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// prefixes are the subject's marks of a reply or a forward (English and a few others').
var prefixes = regexp.MustCompile(`(?i)^\s*((re|fwd?|aw|sv|wg|tr)(\[\d+\])?\s*:\s*)+`)

// threadKey is the thread of a message from the sender with subject, when it names none it
// answers: the sender and the subject without its Re: and Fwd:.
func threadKey(from, subject string) string {
	return hashOf("thread", from, strings.ToLower(strings.TrimSpace(prefixes.ReplaceAllString(subject, ""))))
}

// cut is text cut to at most n bytes, on a character's boundary.
func cut(text string, n int) string {
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

// kept are the attachments as a message keeps them: their content up to MaxAttachments in all.
func kept(list []Attachment) []Attachment {
	out := make([]Attachment, 0, len(list))
	left := MaxAttachments
	for _, a := range list {
		if len(a.Data) > left {
			a.Data = nil
		}
		left -= len(a.Data)
		out = append(out, a)
	}
	return out
}

func eventOf(e Email) Event {
	var to string
	if len(e.To) > 0 {
		to = e.To[0].Address
	}
	return Event{EmailID: e.ID, ChatID: e.ChatID, From: e.From.Address, To: to, Subject: e.Subject,
		Text: cut(e.TextBody, MaxEventText), Error: e.Error}
}

// Answer answers the inbound email id as its settings say: as a turn of its thread's chat, by
// its sender as the agent's end user, whose answer is sent (reply_mode auto) or kept as a draft
// (draft). Mail that is not to be answered is filed: reply_mode off, an automatic message, one
// from an address of the mail domain, one the relay's checks failed (filter_spam), a sender
// answered max_answers_per_hour times in the last hour. An email handled before is not handled
// again. On the final attempt (final), a failure of ours marks it failed.
func (s *Service) Answer(ctx context.Context, id string, final bool) error {
	e, err := s.repo.Find(ctx, id)
	if err != nil || e.Status != StatusReceived {
		return ignoreGone(err)
	}
	st, err := s.repo.Settings(ctx, e.BotID)
	var bot agents.Bot
	if err == nil {
		bot, err = s.svc.Agents.Find(ctx, e.BotID)
	}
	if apperr.IsNotFound(err) || (err == nil && !bot.Active()) {
		return s.file(ctx, e, "the agent is gone or not active")
	}
	if err != nil {
		return err
	}
	why, err := s.unanswerable(ctx, st, e)
	if err != nil {
		return err
	}
	if why != "" {
		return s.file(ctx, e, why)
	}
	err = s.turn(ctx, st, bot, e)
	var failure *apperr.Error
	if errors.As(err, &failure) && !apperr.Passing(failure) {
		return s.file(ctx, e, "not answered: "+failure.Message)
	}
	if err != nil && final {
		e.Status, e.Error, e.UpdatedAt = StatusFailed, bounded("the agent could not answer: "+err.Error()), s.now()
		return errors.Join(err, s.repo.Set(ctx, e, outbox.Event{}))
	}
	return err
}

// file keeps e unanswered, saying why.
func (s *Service) file(ctx context.Context, e Email, why string) error {
	e.Status, e.Note, e.UpdatedAt = StatusFiled, bounded(why), s.now()
	return s.repo.Set(ctx, e, outbox.Event{})
}

// spam reads a relay's failed verdicts in its Authentication-Results.
var spam = regexp.MustCompile(`(?i)\b(spf|dkim|dmarc)\s*=\s*(fail|softfail|permerror)\b`)

// unanswerable says why e is not to be answered ("" when it is).
func (s *Service) unanswerable(ctx context.Context, st Settings, e Email) (string, error) {
	to := replyAddress(e)
	switch {
	case st.ReplyMode == ReplyOff:
		return "reply_mode is off: mail is filed, not answered", nil
	case e.Automatic:
		return "sent automatically (an auto-reply, a bounce, a list or bulk mail): never answered", nil
	case to.Address == "":
		return "no sender to answer", nil
	case strings.HasSuffix(strings.ToLower(to.Address), "@"+s.domain):
		return "from an address of this deployment's mail domain: agents do not answer each other", nil
	case st.FilterSpam && spam.MatchString(e.AuthenticationResults):
		return "the relay's checks failed (filter_spam): " + e.AuthenticationResults, nil
	case st.ReplyMode == ReplyDraft:
		return "", nil
	}
	n, err := s.repo.AnswersTo(ctx, e.BotID, strings.ToLower(to.Address), s.now().Add(-time.Hour))
	if err != nil || n < st.MaxAnswersPerHour {
		return "", err
	}
	return fmt.Sprintf("the agent answered this sender %d times in the last hour (max_answers_per_hour)", n), nil
}

// replyAddress is where e's answer goes: its Reply-To, else its sender.
func replyAddress(e Email) Address {
	if len(e.ReplyTo) > 0 && e.ReplyTo[0].Address != "" {
		return e.ReplyTo[0]
	}
	return e.From
}

// turn answers e, the message of its sender as the agent's end user, in its thread's chat (a
// new one when it has none, or its chat was deleted).
func (s *Service) turn(ctx context.Context, st Settings, bot agents.Bot, e Email) error {
	refs := append([]string{e.InReplyTo}, e.References...)
	chatID, err := s.repo.ChatOf(ctx, e.BotID, refs, e.ThreadKey)
	if err != nil {
		return err
	}
	sub, err := s.svc.Subscribers.OfPlatform(ctx, bot, "email:"+e.FromAddress, e.From.Name)
	if err != nil {
		return err
	}
	if err := s.svc.Limit(ctx, bot, "subscriber:"+sub.ID); err != nil {
		return err
	}
	text := strings.TrimSpace(s.svc.NewPart(e.TextBody))
	if text == "" {
		text = strings.TrimSpace(e.TextBody)
	}
	if chatID == "" && strings.TrimSpace(e.Subject) != "" {
		text = "Subject: " + strings.TrimSpace(e.Subject) + "\n\n" + text
	}
	if utf8.RuneCountInString(text) > chats.MaxMessageLength {
		text = string([]rune(text)[:chats.MaxMessageLength])
	}
	asker := chats.Asker{AccountID: sub.ID, Name: sub.Name, Subscriber: sub.ID}
	in := chats.Input{Message: &text, ChatID: chatID, ReasoningMode: bot.ReasoningType, RunID: runPrefix + e.ID, Origin: Origin, Channel: Origin}
	if chats.Mode(in) == chats.ModeAgent {
		if run, err := s.svc.Runs.Get(ctx, bot.ProjectID, bot.ID, in.RunID); err == nil {
			// A retry of a turn whose run was started: the run answers when it stops (Settle).
			e.Status, e.ChatID, e.UpdatedAt = StatusPending, run.ChatID, s.now()
			return s.repo.Set(ctx, e, outbox.Event{})
		} else if !apperr.IsNotFound(err) {
			return err
		}
	}
	out, err := s.svc.Chats.Chat(ctx, bot.ProjectID, bot, asker, in, nil)
	if apperr.IsNotFound(err) && in.ChatID != "" {
		// The thread's chat was deleted: the thread goes on in a new one.
		in.ChatID = ""
		out, err = s.svc.Chats.Chat(ctx, bot.ProjectID, bot, asker, in, nil)
	}
	if err != nil {
		return err
	}
	if out.Reply != nil {
		e.ChatID = out.Reply.ChatID
	} else {
		run, err := s.svc.Runs.Get(ctx, bot.ProjectID, bot.ID, out.RunID)
		if err != nil {
			return err
		}
		e.ChatID = run.ChatID
	}
	if in.ChatID == "" {
		if err := s.svc.Subscribers.ChatStarted(ctx, sub); err != nil {
			return err
		}
	}
	switch {
	case out.Reply == nil:
		// An agent run answers when it stops (Settle).
		e.Status, e.UpdatedAt = StatusPending, s.now()
		return s.repo.Set(ctx, e, outbox.Event{})
	case out.Reply.Type == chats.KindHuman:
		return s.file(ctx, e, "a person of the team has taken the chat over: the agent leaves it to them")
	}
	return s.answer(ctx, st, bot, e, out.Reply.WithLinks())
}

// answer keeps the agent's answer text to e: a draft in reply_mode draft, else sent.
func (s *Service) answer(ctx context.Context, st Settings, bot agents.Bot, e Email, text string) error {
	out := s.outgoing(st, bot, e, "reply-"+e.ID, text, ByAgent)
	if st.ReplyMode == ReplyDraft {
		out.Status = StatusDraft
	}
	fresh, err := s.keepAnswer(ctx, &e, out)
	if err != nil || out.Status == StatusDraft {
		return err
	}
	return s.queueSend(ctx, out, fresh)
}

// keepAnswer keeps out, the answer to e, unless it was kept before, and marks e as its status
// says; it reports whether out is new.
func (s *Service) keepAnswer(ctx context.Context, e *Email, out Email) (bool, error) {
	kept, fresh, err := s.repo.Take(ctx, out, outbox.Event{})
	if err != nil {
		return false, err
	}
	// A retried turn finds its answer kept before, perhaps sent: e shows that one's status.
	e.ReplyID, e.Status, e.Note, e.Error, e.UpdatedAt = kept.ID, inboundStatus(kept.Status), "", kept.Error, s.now()
	return fresh, s.repo.Set(ctx, *e, outbox.Event{})
}

// inboundStatus is the status of an inbound email whose answer's status is status.
func inboundStatus(status string) string {
	if status == StatusSent {
		return StatusAnswered
	}
	return status
}

// outgoing is the answer id to e, of text, written by by, threaded under e.
func (s *Service) outgoing(st Settings, bot agents.Bot, e Email, id, text, by string) Email {
	now := s.now()
	to := replyAddress(e)
	if st.Signature != "" {
		text = strings.TrimRight(text, "\n") + "\n\n-- \n" + st.Signature
	}
	refs := append(append([]string{}, e.References...), e.MessageID)
	if len(refs) > maxReferences {
		refs = refs[len(refs)-maxReferences:]
	}
	subject := strings.TrimSpace(e.Subject)
	if !prefixes.MatchString(subject) || strings.HasPrefix(strings.ToLower(subject), "fw") {
		subject = "Re: " + subject
	}
	from := st.Address + "@" + s.domain
	return Email{ID: id, ProjectID: e.ProjectID, BotID: e.BotID, Direction: DirectionOut,
		MessageID: ids.New() + "@" + s.domain, InReplyTo: e.MessageID, References: refs,
		From: Address{Name: bot.Name, Address: from}, To: []Address{to}, FromAddress: from, ToAddress: strings.ToLower(to.Address),
		Subject: subject, TextBody: cut(text, MaxText), HTMLBody: markdown.HTML(text), Attachments: []Attachment{}, Status: StatusPending,
		ChatID: e.ChatID, ThreadKey: e.ThreadKey, AnswerTo: e.ID, By: by, CreatedAt: now, UpdatedAt: now}
}

// maxReferences bounds the References an answer carries (the thread's latest).
const maxReferences = 20

// queueSend sends out at once when it is new; what the relay does not take now is left to the
// queue, as is an answer kept before (a retried turn).
func (s *Service) queueSend(ctx context.Context, out Email, fresh bool) error {
	task := tasks.NewEmailSendTask(out.ID)
	if !fresh {
		return s.queue.Enqueue(ctx, task)
	}
	if err := s.deliver(ctx, out, false); err != nil {
		return s.queue.Enqueue(ctx, task)
	}
	return nil
}

// Send sends the answer id through the relay (the queue's email:send). A relay that cannot take
// it now (down, or answering 4xx) is tried again through the queue, the error shown on the
// answer and its email meanwhile; one that refuses it for good, or on the final attempt, fails
// it (email.failed).
func (s *Service) Send(ctx context.Context, id string, final bool) error {
	out, err := s.repo.Find(ctx, id)
	if err != nil || out.Status != StatusPending {
		return ignoreGone(err)
	}
	return s.deliver(ctx, out, final)
}

// deliver makes an attempt at sending out: sent, it says so (email.replied); with no relay it is
// kept unsent; refused for now and not final, the error is kept and returned; refused for good
// it fails (email.failed). The email it answers shows the outcome.
func (s *Service) deliver(ctx context.Context, out Email, final bool) error {
	e, err := s.repo.Find(ctx, out.AnswerTo)
	if err != nil {
		return ignoreGone(err)
	}
	now := s.now()
	out.UpdatedAt = now
	if s.sender == nil {
		out.Status, out.Error = StatusUnsent, "no relay is configured (AGENTPLANE_SMTP_RELAY): the answer is kept, unsent"
		return s.settle(ctx, out, e, outbox.Event{})
	}
	header := map[string]string{}
	if out.By == ByAgent {
		header["Auto-Submitted"] = "auto-replied"
	}
	out.Attempts++
	err = s.sender.Send(ctx, Outgoing{From: out.From, To: out.To, Subject: out.Subject, Text: out.TextBody, HTML: out.HTMLBody,
		MessageID: out.MessageID, InReplyTo: out.InReplyTo, References: out.References, Header: header})
	if err == nil {
		out.Status, out.Error, out.SentAt = StatusSent, "", &now
		out.AnswerSeconds = now.Sub(e.CreatedAt).Seconds()
		return s.settle(ctx, out, e, emailEvents.New(ctx, outbox.EmailReplied, out.ProjectID, out.BotID, eventOf(out)))
	}
	out.Error = bounded(err.Error())
	if apperr.As(err).Kind == apperr.Unavailable && !final {
		return errors.Join(err, s.settle(ctx, out, e, outbox.Event{}))
	}
	out.Status = StatusFailed
	return s.settle(ctx, out, e, emailEvents.New(ctx, outbox.EmailFailed, out.ProjectID, out.BotID, eventOf(out)))
}

// settle keeps out as it is now, with ev, and shows its outcome on e, the email it answers.
func (s *Service) settle(ctx context.Context, out, e Email, ev outbox.Event) error {
	if err := s.repo.Set(ctx, out, ev); err != nil {
		return err
	}
	if ev.Type != "" {
		s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: out.ID}, ev)
	}
	if e.ReplyID != out.ID {
		// An answer of a person's besides the one e shows: e shows the latest sent.
		if out.Status != StatusSent {
			return nil
		}
		e.ReplyID = out.ID
	}
	e.Status, e.Error, e.UpdatedAt = inboundStatus(out.Status), out.Error, out.UpdatedAt
	return s.repo.Set(ctx, e, outbox.Event{})
}

// Reply sends a person's answer to the agent's inbound email id: content, or, when content is
// empty, the draft the agent wrote (reply_mode draft), as it is.
func (s *Service) Reply(ctx context.Context, projectID string, bot agents.Bot, id, content string) (Email, error) {
	e, err := s.repo.Get(ctx, projectID, bot.ID, id)
	if err != nil {
		return Email{}, err
	}
	if e.Direction != DirectionIn {
		return Email{}, apperr.Invalidf("email_id", "names an email the agent sent; answer one it received")
	}
	content = strings.TrimSpace(content)
	if len(content) > MaxText {
		return Email{}, apperr.Invalidf("content", "must be at most %d bytes", MaxText)
	}
	st, err := s.Settings(ctx, bot)
	if err != nil {
		return Email{}, err
	}
	var out Email
	if e.ReplyID != "" {
		if draft, err := s.repo.Find(ctx, e.ReplyID); err == nil && draft.Status == StatusDraft {
			out = draft
		} else if err != nil && !apperr.IsNotFound(err) {
			return Email{}, err
		}
	}
	switch {
	case content == "" && out.ID == "":
		return Email{}, apperr.Invalidf("content", "is required (without it, only an agent's draft is sent)")
	case content != "" && out.ID != "":
		// The person's own words replace the draft.
		edited := s.outgoing(st, bot, e, out.ID, content, ByPerson)
		edited.MessageID, edited.CreatedAt = out.MessageID, out.CreatedAt
		out = edited
	case content != "":
		out = s.outgoing(st, bot, e, ids.New(), content, ByPerson)
		if _, _, err := s.repo.Take(ctx, out, outbox.Event{}); err != nil {
			return Email{}, err
		}
	}
	out.Status, out.UpdatedAt = StatusPending, s.now()
	e.ReplyID = out.ID
	if err := s.repo.Set(ctx, out, outbox.Event{}); err != nil {
		return Email{}, err
	}
	if err := s.repo.Set(ctx, e, outbox.Event{}); err != nil {
		return Email{}, err
	}
	if err := s.queueSend(ctx, out, true); err != nil {
		return Email{}, err
	}
	return s.repo.Get(ctx, projectID, bot.ID, out.ID)
}

// ToChat sends text, a person's answer in the agent's place (the inbox), to the sender of the
// latest email of the chat chatID, when it is an email thread, once per key; a chat of no
// email is left as it is.
func (s *Service) ToChat(ctx context.Context, projectID, botID, chatID, text, key string) error {
	e, err := s.repo.LatestOfChat(ctx, botID, chatID)
	if err != nil || e.ProjectID != projectID {
		return ignoreGone(err)
	}
	bot, err := s.svc.Agents.Find(ctx, botID)
	if err != nil {
		return ignoreGone(err)
	}
	st, err := s.Settings(ctx, bot)
	if err != nil {
		return err
	}
	out := s.outgoing(st, bot, e, "op-"+hashOf(e.ID, key), text, ByPerson)
	_, fresh, err := s.repo.Take(ctx, out, outbox.Event{})
	if err != nil {
		return err
	}
	return s.queueSend(ctx, out, fresh)
}

// Settle answers the email an agent run answered once the run stops: its reply is sent (or
// kept as a draft); a failed run fails the email. A run that waits for the approval of a tool
// call leaves the email pending with a note saying so: the run stops again once decided, and
// its answer goes out then.
// Runs of other origins are not an inbox's.
func (s *Service) Settle(ctx context.Context, run agentruns.Execution) error {
	if run.Origin != Origin || !strings.HasPrefix(run.ID, runPrefix) {
		return nil
	}
	e, err := s.repo.Find(ctx, strings.TrimPrefix(run.ID, runPrefix))
	if err != nil || e.Status != StatusPending || e.ReplyID != "" {
		return ignoreGone(err)
	}
	e.ChatID = run.ChatID
	if run.Status == agentruns.StatusFailed {
		e.Status, e.Error, e.UpdatedAt = StatusFailed, "the agent could not answer", s.now()
		if n := len(run.Log); n > 0 {
			if f := agentruns.FailureOf(run.Log[n-1]); f.Message != "" {
				e.Error = bounded("the agent could not answer: " + f.Message)
			}
		}
		return s.repo.Set(ctx, e, outbox.Event{})
	}
	reply, err := s.svc.Runs.Reply(ctx, run)
	if err != nil {
		return err
	}
	if reply.RequiresApprove {
		e.Note, e.UpdatedAt = bounded("the agent's run "+run.ID+" waits for the approval of a tool call (POST /v1/bot/chat/execute-tool); its answer goes out once the run goes on"), s.now()
		return s.repo.Set(ctx, e, outbox.Event{})
	}
	st, err := s.repo.Settings(ctx, e.BotID)
	var bot agents.Bot
	if err == nil {
		bot, err = s.svc.Agents.Find(ctx, e.BotID)
	}
	if err != nil {
		return ignoreGone(err)
	}
	e.Note = ""
	return s.answer(ctx, st, bot, e, reply.WithLinks())
}
