package workflows

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/lease"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/sources"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Webhook delivery.
const (
	// SignatureHeader carries "v1=" and the hex HMAC-SHA256, under the project's signing
	// secret, of the timestamp, a dot and the body.
	SignatureHeader = "X-Agentplane-Signature"
	// TimestampHeader is the Unix time of the delivery, in seconds.
	TimestampHeader = "X-Agentplane-Timestamp"
	// DeliveryHeader identifies the delivery (run id and action index); it is also sent as
	// Idempotency-Key, and is the same on every attempt.
	DeliveryHeader = "X-Agentplane-Delivery"
	// webhookAttempts is how many times a delivery is tried on 408, 429, 5xx and network errors.
	webhookAttempts = 4
	// webhookBackoff is the first wait between attempts; it doubles, with jitter.
	webhookBackoff = 250 * time.Millisecond
	// maxRetryAfter bounds the wait a receiver's Retry-After may ask for.
	maxRetryAfter = 5 * time.Second
	// outputBytes bounds what a run keeps of an action's output.
	outputBytes = 1024
	// defaultWebhookTimeout applies when the action sets no timeout_seconds.
	defaultWebhookTimeout = 10 * time.Second
)

// Sign is the signature of a delivery: "v1=" and the hex HMAC-SHA256 of timestamp + "." + body
// under secret. Receivers compute it the same way and compare in constant time.
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "v1=" + hex.EncodeToString(m.Sum(nil))
}

// Bots reads agents.
type Bots interface {
	Get(ctx context.Context, projectID, idOrUUID string) (agents.Bot, error)
}

// Webhooks delivers webhooks: the SSRF-guarded client (shared/adapters/safehttp), without
// redirects.
type Webhooks interface {
	Do(req *http.Request) (*http.Response, error)
	// Permanent reports whether an error of Do is one sending again cannot mend (an address the
	// guard refuses, a malformed URL, an unknown host).
	Permanent(err error) bool
}

// Actors are the services a run's actions act through.
type Actors struct {
	Bots     Bots
	CRM      *crm.Service
	Sources  *sources.Service
	Chats    *chats.Service
	Webhooks Webhooks
	// Channels deliver send_message's message to a conversation on a messaging platform.
	Channels Channels
	// Handoff flags a chat of the agent for a person of the team (request_handoff).
	Handoff func(ctx context.Context, projectID, botID, chatID, reason, urgency string) error
}

// Channels deliver messages to the conversations of agents' channel connections
// (shared/channels implements it).
type Channels interface {
	// Post delivers text to the conversation whose chat is chatID on the agent's channel
	// channelID, once per key.
	Post(ctx context.Context, projectID, botID, channelID, chatID, text, key string) error
}

// Executor runs workflow runs in workers.
type Executor struct {
	repo   RunRepo
	events *outbox.Dispatcher
	actors Actors
	log    *slog.Logger
	lease  time.Duration
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
}

// NewExecutor returns the worker side of workflow runs. lease is how long an attempt holds a
// run without renewing its lease (it renews it every third of that): a worker that dies
// holding a run leaves it to the next attempt that long after.
func NewExecutor(repo RunRepo, events *outbox.Dispatcher, actors Actors, log *slog.Logger, lease time.Duration) *Executor {
	return &Executor{repo: repo, events: events, actors: actors, log: log, lease: lease,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }, sleep: sleep}
}

// ErrLost ends an attempt whose lease on its run another attempt took, found by one of its
// writes (SaveRun).
var ErrLost = errors.New("workflows: the run's lease was lost")

// errHeld fails a task whose run another attempt holds, so that the task is tried again: if
// that attempt dies, the run's lease expires and a later try takes the run over.
var errHeld = errors.New("workflows: the run is held by another attempt")

// Lease returns a new lease, for a run this process holds from now.
func (x *Executor) Lease() Lease {
	return Lease{Owner: ids.New(), Until: x.now().Add(x.lease)}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Execute claims the run of t and runs its actions that have not run yet, in order, saving the
// run after each (the last with the run's end: a crash before that write runs the last action
// again, as it would have before its own). An action that fails ends the run unless it
// continues on error. A failure of the platform (the store down) returns an error, so the task
// is retried and the run resumes after the last saved action, unless this is the last attempt
// (final): the run then fails. A run another attempt holds is an error too, tried again later.
func (x *Executor) Execute(ctx context.Context, t tasks.WorkflowRunPayload, final bool) error {
	r, ok, err := x.repo.Claim(ctx, t.RunID, x.Lease(), x.now())
	switch {
	case apperr.As(err).Kind == apperr.NotFound:
		return nil
	case err != nil:
		return err
	case r.Status == RunSucceeded || r.Status == RunFailed:
		return nil
	case !ok && final:
		x.log.Warn("workflow run left to the attempt that holds it", "run_id", r.UUID)
		return nil
	case !ok:
		return errHeld
	}
	return x.Run(ctx, r, final)
}

// Run runs r, which the lease in r holds (Execute claimed it, or OnEvent stored it so), renewing
// the lease as it goes; an attempt that returns an error gives the run up for the next one.
func (x *Executor) Run(parent context.Context, r Run, final bool) error {
	owner := r.Owner
	lost, err := lease.Hold(parent, x.lease/3, func(ctx context.Context) (bool, error) {
		return x.repo.Renew(ctx, r.UUID, owner, x.now().Add(x.lease))
	}, func(ctx context.Context) error { return x.execute(ctx, r, owner, final) })
	if err == nil || lost || errors.Is(err, ErrLost) {
		return nil
	}
	rctx, done := context.WithTimeout(context.WithoutCancel(parent), 5*time.Second)
	defer done()
	if rerr := x.repo.Release(rctx, r.UUID, owner); rerr != nil {
		x.log.Warn("workflow run not released", "run_id", r.UUID, "error", rerr)
	}
	return err
}

// execute runs the actions of r, held by owner, that have not run yet.
func (x *Executor) execute(ctx context.Context, r Run, owner string, final bool) error {
	var envelope map[string]any
	if err := json.Unmarshal([]byte(r.Envelope), &envelope); err != nil {
		return x.end(ctx, &r, owner, fmt.Sprintf("the run's trigger data is unreadable: %v", err))
	}
	now := x.now()
	r.Status = RunRunning
	if r.StartedAt == nil {
		r.StartedAt = &now
	}
	if len(r.Actions) == 0 {
		x.log.Info("workflow run has nothing to do: the workflow has no actions (a draft)", "run_id", r.UUID, "workflow_id", r.WorkflowID)
	}
	// The events the actions cause carry the chain of workflows that led to them.
	ctx = outbox.WithCause(ctx, append(slices.Clone(r.Cause), r.WorkflowID))
	for i := range r.Actions {
		ar := &r.Actions[i]
		if ar.Status != ActionPending {
			continue
		}
		step := r.Steps[i]
		params, _ := Render(step.Params, envelope).(map[string]any)
		started := x.now()
		ar.StartedAt = &started
		out, code, attempts, err := x.act(ctx, r, i, step.Type, params, envelope)
		ar.Attempts += attempts
		ar.ResponseCode = code
		if err != nil && !refused(err) && !final && ctx.Err() == nil {
			if serr := x.repo.SaveRun(context.WithoutCancel(ctx), r, owner, nil); serr != nil {
				x.log.Warn("workflow run not saved", "run_id", r.UUID, "error", serr)
			}
			return err
		}
		ended := x.now()
		ar.EndedAt = &ended
		if err != nil {
			ar.Status, ar.Error = RunFailed, errorText(err)
			if !step.ContinueOnError {
				for j := i + 1; j < len(r.Actions); j++ {
					r.Actions[j].Status = ActionSkipped
				}
				return x.end(ctx, &r, owner, fmt.Sprintf("action %d (%s) failed: %s", i, step.Type, ar.Error))
			}
		} else {
			ar.Status, ar.Output = RunSucceeded, clip(out)
		}
		if i == len(r.Actions)-1 {
			break // the end's write saves the last action with it
		}
		if err := x.repo.SaveRun(ctx, r, owner, nil); err != nil {
			return err
		}
	}
	return x.end(ctx, &r, owner, "")
}

// end saves the run as ended (failed with reason, else succeeded) with its event.
func (x *Executor) end(ctx context.Context, r *Run, owner, reason string) error {
	now := x.now()
	r.Status, r.Error, r.EndedAt = RunSucceeded, reason, &now
	if reason != "" {
		r.Status = RunFailed
	}
	ev := runEvent(ctx, *r)
	ctx = context.WithoutCancel(ctx)
	if err := x.repo.SaveRun(ctx, *r, owner, &ev); err != nil {
		return err
	}
	x.events.Dispatch(ctx, outbox.Ref{Resource: RunResource, ID: r.UUID}, ev)
	return nil
}

// refusal is an action's failure that trying again will not change (bad parameters, a 4xx).
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

func refused(err error) bool {
	var r refusal
	if errors.As(err, &r) {
		return true
	}
	switch apperr.As(err).Kind {
	case apperr.Invalid, apperr.NotFound, apperr.Conflict, apperr.Forbidden:
		return true
	}
	return false
}

// act runs action i of r: its output, the response status (webhooks) and attempts.
func (x *Executor) act(ctx context.Context, r Run, i int, typ string, p map[string]any, envelope map[string]any) (string, int, int, error) {
	key := r.UUID + ":" + strconv.Itoa(i)
	switch typ {
	case ActionWebhook:
		return x.webhook(ctx, r, key, p, envelope)
	case ActionCreateDeal, ActionUpdateDeal:
		var in struct {
			crm.DealInput
			DealID string `json:"deal_id"`
		}
		if err := remarshal(p, &in); err != nil {
			return "", 0, 1, refusal{err}
		}
		var v crm.View
		var err error
		if typ == ActionCreateDeal {
			v, err = x.actors.CRM.CreateDealOnce(ctx, r.ProjectID, r.BotID, in.DealInput, key)
		} else {
			v, err = x.actors.CRM.UpdateDealOnce(ctx, r.ProjectID, r.BotID, in.DealID, in.DealInput, key)
		}
		return output(v), 0, 1, err
	case ActionAddMemory:
		var in sources.Input
		if err := remarshal(p, &in); err != nil {
			return "", 0, 1, refusal{err}
		}
		src, err := x.actors.Sources.Create(ctx, r.ProjectID, r.BotID, "workflow:"+r.WorkflowID, in)
		return output(map[string]any{"source_id": src.UUID, "status": src.Status}), 0, 1, err
	case ActionSendMessage:
		return x.sendMessage(ctx, r, key, p)
	case ActionRequestHandoff:
		chatID, _ := p["chat_id"].(string)
		reason, _ := p["reason"].(string)
		urgency, _ := p["urgency"].(string)
		err := x.actors.Handoff(ctx, r.ProjectID, r.BotID, chatID, cmp.Or(reason, "The workflow "+r.WorkflowID+" asked for a person."), urgency)
		return output(map[string]any{"chat_id": chatID}), 0, 1, err
	}
	return "", 0, 1, refusal{fmt.Errorf("unknown action type %q", typ)}
}

// sendMessage posts the message into a chat of the agent as the agent (mode post), or asks it
// of the agent and keeps its answer (mode reply); with channel_id, the message posted (or the
// answer) is delivered to the chat's conversation on that channel too, once per key.
func (x *Executor) sendMessage(ctx context.Context, r Run, key string, p map[string]any) (string, int, int, error) {
	out, credits, attempts, err := x.postMessage(ctx, r, p)
	channelID, _ := p["channel_id"].(string)
	if err != nil || channelID == "" {
		return out, credits, attempts, err
	}
	var said struct {
		ChatID string `json:"chat_id"`
		Reply  string `json:"reply"`
	}
	_ = json.Unmarshal([]byte(out), &said)
	text, _ := p["message"].(string)
	if said.Reply != "" {
		text = said.Reply
	}
	return out, credits, attempts, x.actors.Channels.Post(ctx, r.ProjectID, r.BotID, channelID, said.ChatID, text, key)
}

// postMessage is sendMessage's message in the agent's chat.
func (x *Executor) postMessage(ctx context.Context, r Run, p map[string]any) (string, int, int, error) {
	bot, err := x.actors.Bots.Get(ctx, r.ProjectID, r.BotID)
	if err != nil {
		return "", 0, 1, err
	}
	text, _ := p["message"].(string)
	chatID, _ := p["chat_id"].(string)
	if mode, _ := p["mode"].(string); mode == MessageModeReply {
		in := chats.Input{Message: &text, ChatID: chatID, ReasoningMode: "standard"}
		if err := in.Validate(); err != nil {
			return "", 0, 1, err
		}
		t, err := x.actors.Chats.Begin(ctx, r.ProjectID, bot, chats.Asker{AccountID: "workflow:" + r.WorkflowID}, in, "standard")
		if err != nil {
			return "", 0, 1, err
		}
		reply, err := x.actors.Chats.Answer(ctx, t, nil)
		return output(map[string]any{"chat_id": reply.ChatID, "reply": reply.Reply}), 0, 1, err
	}
	m, err := x.actors.Chats.Post(ctx, r.ProjectID, bot, chatID, text)
	return output(map[string]any{"chat_id": m.ChatID, "message_id": m.UUID}), 0, 1, err
}

// webhook delivers the action's body (the envelope when it sets none) to its url, signed, and
// tries again on 408, 429, 5xx and network errors with a doubling wait. Redirects are not
// followed; the response is read up to the client's limit.
func (x *Executor) webhook(ctx context.Context, r Run, delivery string, p map[string]any, envelope map[string]any) (string, int, int, error) {
	url, _ := p["url"].(string)
	var body []byte
	switch b := p["body"].(type) {
	case nil:
		body, _ = json.Marshal(envelope)
	case string:
		body = []byte(b)
	default:
		body, _ = json.Marshal(b)
	}
	timeout := defaultWebhookTimeout
	if n, ok := number(p["timeout_seconds"]); ok && n > 0 {
		timeout = time.Duration(n * float64(time.Second))
	}
	secret, err := x.repo.Secret(ctx, r.ProjectID, newSecret())
	if err != nil {
		return "", 0, 0, err
	}
	wait := webhookBackoff
	var last error
	code := 0
	for attempt := 1; attempt <= webhookAttempts; attempt++ {
		out, status, retryAfter, err := x.deliver(ctx, url, delivery, secret, p["headers"], body, timeout)
		code = status
		switch {
		case err == nil:
			return out, code, attempt, nil
		case refused(err), ctx.Err() != nil:
			return "", code, attempt, err
		}
		last = err
		if attempt == webhookAttempts {
			break
		}
		d := wait + rand.N(wait/2)
		if retryAfter > 0 {
			d = min(retryAfter, maxRetryAfter)
		}
		if err := x.sleep(ctx, d); err != nil {
			return "", code, attempt, err
		}
		wait *= 2
	}
	return "", code, webhookAttempts, refusal{fmt.Errorf("no success after %d attempts: %w", webhookAttempts, last)}
}

// deliver makes one attempt of a delivery: the response body (its start), status, the wait a
// 429 or 503 asked for, and an error: a refusal for answers that will not change.
func (x *Executor) deliver(ctx context.Context, url, delivery, secret string, headers any, body []byte, timeout time.Duration) (string, int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", 0, 0, refusal{err}
	}
	if h, ok := headers.(map[string]any); ok {
		for k, v := range h {
			req.Header.Set(k, fmt.Sprint(v))
		}
	}
	ts := strconv.FormatInt(x.now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(TimestampHeader, ts)
	req.Header.Set(SignatureHeader, Sign(secret, ts, body))
	req.Header.Set(DeliveryHeader, delivery)
	req.Header.Set("Idempotency-Key", delivery)
	res, err := x.actors.Webhooks.Do(req)
	if err != nil {
		if x.actors.Webhooks.Permanent(err) {
			return "", 0, 0, refusal{err}
		}
		return "", 0, 0, err
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(res.Body, outputBytes))
	_, _ = io.Copy(io.Discard, res.Body)
	switch s := res.StatusCode; {
	case s >= 200 && s < 300:
		return string(out), s, 0, nil
	case s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500:
		wait := time.Duration(0)
		if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && n >= 0 {
			wait = time.Duration(n) * time.Second
		}
		return "", s, wait, fmt.Errorf("the receiver answered %d", s)
	case s >= 300 && s < 400:
		return "", s, 0, refusal{fmt.Errorf("the receiver answered %d; redirects are not followed", s)}
	}
	return "", res.StatusCode, 0, refusal{fmt.Errorf("the receiver answered %d: %s", res.StatusCode, strings.TrimSpace(string(out)))}
}

// remarshal decodes the action's params into v as a request body would be.
func remarshal(p map[string]any, v any) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

func output(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// clip keeps the start of s, at most outputBytes bytes, on a character boundary.
func clip(s string) string { return clipTo(s, outputBytes) }

// clipTo keeps the start of s, at most n bytes, on a character boundary.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
