package heartbeats

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tasks"
)

// firingEvents and statusEvents are the events of heartbeats: a firing that ended, and the
// heartbeat turned off.
var (
	firingEvents = outbox.Declare[FiringEvent](outbox.HeartbeatCompleted, outbox.HeartbeatFailed)
	statusEvents = outbox.Declare[StatusEvent](outbox.HeartbeatPaused, outbox.HeartbeatDisabled)
)

// Origin marks the agent runs of firings (agentruns.Execution.Origin).
const Origin = "heartbeat"

// planBatch bounds the heartbeats one look of the scheduler queues.
const planBatch = 500

// updateAttempts bounds the tries of a write that meets a concurrent one.
const updateAttempts = 20

// Plan queues the firing of every enabled heartbeat due at now, then moves its next firing past
// now. The task's id is the heartbeat's and the due slot's, so schedulers looking together queue
// one firing; a heartbeat whose slots passed while no scheduler looked fires once, for the first
// of them. It returns how many it queued.
func (s *Service) Plan(ctx context.Context, now time.Time) (int, error) {
	due, err := s.repo.Due(ctx, now, planBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range due {
		slot := *h.NextRunAt
		if err := s.queue.Enqueue(ctx, tasks.NewHeartbeatFireTask(h.UUID, slot, false)); err != nil {
			return n, err
		}
		var next *time.Time
		if c, err := h.schedule(); err == nil {
			next = s.next(h, c, now)
		}
		if _, err := s.repo.Advance(ctx, h.UUID, slot, next); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Fire carries out the firing of a task: it records the firing under its id (a task run twice
// finds it), then starts the agent run unless the agent, the heartbeat or its budget refuse it.
func (s *Service) Fire(ctx context.Context, p tasks.HeartbeatFirePayload) error {
	h, err := s.repo.ByID(ctx, p.HeartbeatID)
	if apperr.As(err).Kind == apperr.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	trigger := TriggerSchedule
	if p.Manual {
		trigger = TriggerManual
	}
	now := s.now()
	f, err := s.repo.InsertFiring(ctx, Firing{ID: FiringID(h.UUID, trigger, p.At), HeartbeatID: h.UUID, ProjectID: h.ProjectID, BotID: h.BotID,
		Trigger: trigger, ScheduledAt: p.At, Status: FiringStarting, CreatedAt: now, UpdatedAt: now})
	if err != nil || f.Status != FiringStarting {
		return err
	}
	bot, err := s.bots.Get(ctx, h.ProjectID, h.BotID)
	switch {
	case apperr.As(err).Kind == apperr.NotFound:
		return s.skip(ctx, f, StatusDisabled, "The agent was deleted.")
	case err != nil:
		return err
	}
	if h, err = s.claim(ctx, f, bot); err != nil || h.Running != f.ID {
		return err
	}
	return s.start(ctx, h, bot, f)
}

// claim makes f the heartbeat's firing under way, or records why it does not start.
func (s *Service) claim(ctx context.Context, f Firing, bot agents.Bot) (Heartbeat, error) {
	for range updateAttempts {
		h, err := s.repo.ByID(ctx, f.HeartbeatID)
		if err != nil {
			return Heartbeat{}, err
		}
		if h.Running == f.ID {
			return h, nil
		}
		if status, reason := s.refusal(h, bot, f); reason != "" {
			return Heartbeat{}, s.skip(ctx, f, status, reason)
		}
		h.Running, h.UpdatedAt, h.Rev = f.ID, s.now(), h.Rev+1
		if err := s.repo.Replace(ctx, h); !changed(err) {
			return h, err
		}
	}
	return Heartbeat{}, apperr.New(apperr.Conflict, "heartbeat_busy", "The heartbeat changed too often to take its firing; it is retried.")
}

// refusal is why f may not start, and the status the heartbeat then takes ("" keeps it).
func (s *Service) refusal(h Heartbeat, bot agents.Bot, f Firing) (status, reason string) {
	switch {
	case bot.Heartbeat == 0:
		return StatusPaused, "The agent's heartbeat flag is off: turn it on, then enable the heartbeat again."
	case f.Trigger == TriggerSchedule && !h.Enabled:
		return "", "The heartbeat is not enabled."
	case h.Running != "":
		return "", fmt.Sprintf("The firing %s is still under way (running or waiting for an approval).", h.Running)
	}
	if h.CreditBudget > 0 {
		// The month the firing is counted in (count), not the one it happens to start in.
		period, used := periodOf(h, f.ScheduledAt), 0
		if h.Period == period {
			used = h.PeriodCredits
		}
		if cost := max(h.LastCredits, defaultFiringCost); used+cost > h.CreditBudget {
			return StatusPaused, fmt.Sprintf("The credit budget of %d for %s would be exceeded: %d used, and a firing uses about %d. "+
				"Raise credit_budget or wait for the next month, then enable the heartbeat.", h.CreditBudget, period, used, cost)
		}
	}
	return "", ""
}

// skip ends f without a run, for reason; a status other than "" stops the heartbeat (paused or
// disabled) with that reason and emits heartbeat.paused or heartbeat.disabled.
func (s *Service) skip(ctx context.Context, f Firing, status, reason string) error {
	now := s.now()
	ok, err := s.repo.SetFiring(ctx, f.ID, []string{FiringStarting}, map[string]any{"status": FiringSkipped, "reason": reason,
		"ended_at": now, "updated_at": now})
	if err != nil || !ok {
		return err
	}
	return s.update(ctx, f.HeartbeatID, func(h *Heartbeat) ([]outbox.Event, bool) {
		h.Skipped++
		if status == "" || !h.Enabled {
			return nil, true
		}
		return []outbox.Event{s.stop(ctx, h, status, reason)}, true
	})
}

// stop turns h off with status and reason, and returns the event that says so.
func (s *Service) stop(ctx context.Context, h *Heartbeat, status, reason string) outbox.Event {
	h.Enabled, h.Status, h.StatusReason, h.NextRunAt = false, status, reason, nil
	typ := outbox.HeartbeatPaused
	if status == StatusDisabled {
		typ = outbox.HeartbeatDisabled
	}
	return statusEvents.New(ctx, typ, h.ProjectID, h.BotID, StatusEvent{HeartbeatID: h.UUID, Status: status, Reason: reason})
}

// StatusEvent is the data of heartbeat.paused and heartbeat.disabled.
type StatusEvent struct {
	HeartbeatID string `json:"heartbeat_id"`
	Status      string `json:"status"`
	Reason      string `json:"reason"`
}

// FiringEvent is the data of heartbeat.completed and heartbeat.failed.
type FiringEvent struct {
	HeartbeatID       string   `json:"heartbeat_id"`
	FiringID          string   `json:"firing_id"`
	ExecutionID       string   `json:"execution_id"`
	ChatID            string   `json:"chat_id"`
	Trigger           string   `json:"trigger"`
	Status            string   `json:"status"`
	CreditsUsed       int      `json:"credits_used"`
	Answer            string   `json:"answer"`
	Error             *Failure `json:"error,omitempty"`
	ConsecutiveErrors int      `json:"consecutive_errors"`
}

// start starts f's agent run in the heartbeat's chat (a new chat the first time, or when its chat
// was deleted), unless a try before started it: the run's id is the firing's.
func (s *Service) start(ctx context.Context, h Heartbeat, bot agents.Bot, f Firing) error {
	e, err := s.runs.Get(ctx, h.ProjectID, h.BotID, f.ID)
	if apperr.As(err).Kind == apperr.NotFound {
		var out chats.Outcome
		out, err = s.turn(ctx, h, bot, f)
		switch {
		case apperr.As(err).Kind == apperr.Unavailable:
			return err
		case err != nil:
			e := apperr.As(err)
			return s.settle(ctx, f.ID, result{status: FiringFailed, failure: &Failure{Code: e.Code, Message: e.Message}})
		case out.Reply != nil:
			return s.settle(ctx, f.ID, replied(*out.Reply))
		}
		e, err = s.runs.Get(ctx, h.ProjectID, h.BotID, f.ID)
	}
	if err != nil {
		return err
	}
	now := s.now()
	if _, err := s.repo.SetFiring(ctx, f.ID, []string{FiringStarting}, map[string]any{"status": FiringRunning, "execution_id": e.ID,
		"chat_id": e.ChatID, "started_at": now, "updated_at": now}); err != nil {
		return err
	}
	return s.update(ctx, h.UUID, func(h *Heartbeat) ([]outbox.Event, bool) {
		if h.ChatID != "" {
			return nil, false
		}
		h.ChatID = e.ChatID
		return nil, true
	})
}

// turn sends the heartbeat's prompt as a turn of its chat, answered by an agent run of id f.ID.
func (s *Service) turn(ctx context.Context, h Heartbeat, bot agents.Bot, f Firing) (chats.Outcome, error) {
	prompt := h.Prompt
	in := chats.Input{Message: &prompt, ChatID: h.ChatID, ReasoningMode: "agent", ChatMode: h.ChatMode, RunID: f.ID, Origin: Origin}
	asker := chats.Asker{AccountID: h.AccountID, Name: cmp.Or(h.MemberID, "heartbeat")}
	out, err := s.chats.Chat(ctx, h.ProjectID, bot, asker, in, nil)
	if e := apperr.As(err); in.ChatID != "" && e.Kind == apperr.NotFound && e.Code == chats.Resource+"_not_found" {
		in.ChatID = ""
		return s.chats.Chat(ctx, h.ProjectID, bot, asker, in, nil)
	}
	return out, err
}

// result is how a firing ended.
type result struct {
	status  string
	credits int
	tokens  int
	answer  string
	chatID  string
	failure *Failure
}

// replied is the result of a firing answered at once (chat modes plan and edit).
func replied(r chats.Reply) result {
	credits, _ := strconv.Atoi(r.Agent.CreditUsed)
	return result{status: FiringSucceeded, credits: max(credits, defaultFiringCost), tokens: r.Usage.TotalTokens,
		answer: r.Agent.Content, chatID: r.ChatID}
}

// Settle records what the run of a firing came to: an approval it waits for, or its end, which
// settles the firing and the heartbeat. Runs of no heartbeat are ignored. It is idempotent: the
// worker that ends a run calls it, and the reconciler for a run whose worker did not.
func (s *Service) Settle(ctx context.Context, e agentruns.Execution) error {
	if e.Origin != Origin {
		return nil
	}
	switch e.Status {
	case agentruns.StatusApproval:
		reason := "Waits for an approval: approve or reject the tool call in the heartbeat's chat."
		if e.Pending != nil {
			reason = fmt.Sprintf("Waits for an approval to run %s: approve or reject it in the heartbeat's chat.", cmp.Or(e.Pending.Operation, e.Pending.Tool))
		}
		_, err := s.repo.SetFiring(ctx, e.ID, []string{FiringStarting, FiringRunning}, map[string]any{"status": FiringWaiting,
			"reason": reason, "execution_id": e.ID, "chat_id": e.ChatID, "updated_at": s.now()})
		return err
	case agentruns.StatusDone:
		r := result{status: FiringSucceeded, credits: max(e.Calls, 1), tokens: e.Usage.TotalTokens, chatID: e.ChatID}
		if e.Answer != nil {
			r.answer = e.Answer.Content
		}
		return s.settle(ctx, e.ID, r)
	case agentruns.StatusFailed:
		fail := Failure{Code: "run_failed", Message: "The agent run failed."}
		if n := len(e.Log); n > 0 {
			got := agentruns.FailureOf(e.Log[n-1])
			fail = Failure{Code: cmp.Or(got.Code, fail.Code), Message: cmp.Or(got.Message, fail.Message)}
		}
		return s.settle(ctx, e.ID, result{status: FiringFailed, credits: e.Calls, tokens: e.Usage.TotalTokens, chatID: e.ChatID, failure: &fail})
	}
	return nil
}

// settle ends the firing id with r, then counts it in its heartbeat.
func (s *Service) settle(ctx context.Context, id string, r result) error {
	now := s.now()
	set := map[string]any{"status": r.status, "credits": r.credits, "tokens": r.tokens, "answer": truncate(r.answer, maxAnswerInFiring),
		"ended_at": now, "updated_at": now, "reason": ""}
	if r.chatID != "" {
		set["chat_id"] = r.chatID
	}
	if r.failure != nil {
		r.failure.Message = truncate(r.failure.Message, maxReasonInFiring)
		set["error"] = r.failure
	}
	if _, err := s.repo.SetFiring(ctx, id, []string{FiringStarting, FiringRunning, FiringWaiting}, set); err != nil {
		return err
	}
	f, err := s.repo.Firing(ctx, id)
	if err != nil {
		return err
	}
	return s.count(ctx, f)
}

// count adds the ended firing f to its heartbeat's statistics, once: only while the heartbeat
// names f as its firing under way. A failure that makes max_consecutive_errors in a row
// disables the heartbeat.
func (s *Service) count(ctx context.Context, f Firing) error {
	if f.Status == FiringSkipped {
		return nil
	}
	return s.update(ctx, f.HeartbeatID, func(h *Heartbeat) ([]outbox.Event, bool) {
		if h.Running != f.ID {
			return nil, false
		}
		h.Running = ""
		h.Runs++
		h.CreditsUsed += f.Credits
		h.Tokens += f.Tokens
		if period := periodOf(*h, f.ScheduledAt); h.Period != period {
			h.Period, h.PeriodCredits = period, 0
		}
		h.PeriodCredits += f.Credits
		h.LastCredits, h.LastRunAt, h.LastStatus = f.Credits, f.EndedAt, f.Status
		h.ChatID = cmp.Or(h.ChatID, f.ChatID)
		typ := outbox.HeartbeatCompleted
		if f.Status == FiringSucceeded {
			h.Successes++
			h.ConsecutiveErrors, h.LastError = 0, ""
		} else {
			typ = outbox.HeartbeatFailed
			h.Errors++
			h.ConsecutiveErrors++
			if f.Error != nil {
				h.LastError = f.Error.Message
			}
		}
		evs := []outbox.Event{firingEvents.New(ctx, typ, h.ProjectID, h.BotID, FiringEvent{HeartbeatID: h.UUID, FiringID: f.ID, ExecutionID: f.ExecutionID,
			ChatID: f.ChatID, Trigger: f.Trigger, Status: f.Status, CreditsUsed: f.Credits, Answer: f.Answer, Error: f.Error,
			ConsecutiveErrors: h.ConsecutiveErrors})}
		if f.Status == FiringFailed && h.Enabled && h.ConsecutiveErrors >= h.MaxConsecutiveErrors {
			evs = append(evs, s.stop(ctx, h, StatusDisabled, fmt.Sprintf("Disabled after %d failed firings in a row; the last: %s",
				h.ConsecutiveErrors, h.LastError)))
		}
		return evs, true
	})
}

// update applies edit to the heartbeat id and, when edit says to write, writes it with the
// events edit returns, trying again on a concurrent write. A deleted heartbeat is left as it is.
func (s *Service) update(ctx context.Context, id string, edit func(*Heartbeat) ([]outbox.Event, bool)) error {
	for range updateAttempts {
		h, err := s.repo.ByID(ctx, id)
		if apperr.As(err).Kind == apperr.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		evs, write := edit(&h)
		if !write {
			return nil
		}
		h.UpdatedAt, h.Rev = s.now(), h.Rev+1
		err = s.repo.Replace(ctx, h, evs...)
		if changed(err) {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range evs {
			s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: h.UUID}, ev)
		}
		return nil
	}
	return apperr.New(apperr.Conflict, "heartbeat_busy", "The heartbeat changed too often to record its firing; it is retried.")
}

// changed reports whether err is the conflict of a write that another write came before.
func changed(err error) bool {
	e := apperr.As(err)
	return err != nil && e.Kind == apperr.Conflict && e.Code == Resource+"_changed"
}

// staleAfter is how long a firing may stay under way without a change before the reconciler
// reads its run; lostAfter how long one may stay starting, its run never stored, before it is
// failed.
const (
	staleAfter = time.Minute
	lostAfter  = 15 * time.Minute
)

// Reconcile settles the firings whose run ended without its worker settling them (it died
// between the two), counts the ended firings their heartbeat did not, and fails the firings
// whose run never started. It returns how many firings it settled or counted.
func (s *Service) Reconcile(ctx context.Context, now time.Time) (int, error) {
	busy, err := s.repo.Busy(ctx, planBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range busy {
		f, err := s.repo.Firing(ctx, h.Running)
		if err != nil {
			return n, err
		}
		if f.Ended() {
			n++
			if err := s.count(ctx, f); err != nil {
				return n, err
			}
			continue
		}
		if f.UpdatedAt.After(now.Add(-staleAfter)) {
			continue
		}
		e, err := s.runs.Get(ctx, f.ProjectID, f.BotID, f.ID)
		switch {
		case apperr.As(err).Kind == apperr.NotFound && f.UpdatedAt.Before(now.Add(-lostAfter)):
			n++
			err = s.settle(ctx, f.ID, result{status: FiringFailed, failure: &Failure{Code: "firing_not_started",
				Message: "The firing's run was never started: its task failed every attempt."}})
		case err == nil && (e.Status == agentruns.StatusDone || e.Status == agentruns.StatusFailed):
			n++
			err = s.Settle(ctx, e)
		case apperr.As(err).Kind == apperr.NotFound:
			err = nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
