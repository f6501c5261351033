package heartbeats

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/agentruns"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/tasks"
)

// Bots reads agents.
type Bots interface {
	Get(ctx context.Context, projectID, idOrUUID string) (agents.Bot, error)
}

// Chats take the turns of firings (chats.Service).
type Chats interface {
	Chat(ctx context.Context, projectID string, bot agents.Bot, asker chats.Asker, in chats.Input, sink chats.Sink) (chats.Outcome, error)
}

// Runs read the agent runs of firings (agentruns.Service).
type Runs interface {
	Get(ctx context.Context, projectID, botID, id string) (agentruns.Execution, error)
}

// Service configures heartbeats and carries out their firings.
type Service struct {
	repo   Repo
	bots   Bots
	chats  Chats
	runs   Runs
	queue  tasks.Queue
	events *outbox.Dispatcher
	log    *slog.Logger
	now    func() time.Time
	writes keylock.Locks // configuration writes of this process, one at a time per heartbeat
}

// NewService returns the heartbeat service.
func NewService(repo Repo, bots Bots, cs Chats, runs Runs, queue tasks.Queue, events *outbox.Dispatcher, log *slog.Logger) *Service {
	return &Service{repo: repo, bots: bots, chats: cs, runs: runs, queue: queue, events: events, log: log,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// UseClock makes the service read the time from now (tests drive firings with it).
func (s *Service) UseClock(now func() time.Time) { s.now = now }

// heartbeatOff is the error of a heartbeat of an agent whose heartbeat flag is off.
func heartbeatOff() error {
	return apperr.New(apperr.Conflict, "agent_heartbeat_off",
		"The agent's heartbeat flag is off: set heartbeat to 1 on the agent (PUT /v1/bot/update) before configuring or triggering its heartbeats.")
}

// Configure creates a heartbeat of the agent (id empty) or applies in to the heartbeat id. The
// agent's heartbeat flag must be on. A change of schedule, time zone or enabled takes effect at
// once: the next firing is computed again.
func (s *Service) Configure(ctx context.Context, projectID string, bot agents.Bot, accountID, id string, in Input) (Heartbeat, error) {
	if bot.Heartbeat == 0 {
		return Heartbeat{}, heartbeatOff()
	}
	if id = strings.TrimSpace(id); id != "" {
		return apperr.Reapply(ctx, &s.writes, Resource, id, func() (Heartbeat, error) {
			return s.change(ctx, projectID, bot.ID, id, func(h *Heartbeat) error {
				in.apply(h)
				return nil
			})
		})
	}
	all, err := s.repo.All(ctx, projectID, bot.ID)
	if err != nil {
		return Heartbeat{}, err
	}
	if len(all) >= MaxPerAgent {
		return Heartbeat{}, apperr.New(apperr.Conflict, "heartbeat_limit", fmt.Sprintf("An agent has at most %d heartbeats; delete one first.", MaxPerAgent))
	}
	now := s.now()
	h := Heartbeat{UUID: ids.New(), ProjectID: projectID, BotID: bot.ID, AccountID: accountID, Enabled: true, Status: StatusActive,
		MaxConsecutiveErrors: DefaultMaxErrors, CreatedAt: now, UpdatedAt: now}
	in.apply(&h)
	c, err := h.validate()
	if err != nil {
		return Heartbeat{}, err
	}
	h.NextRunAt = s.next(h, c, now)
	return h, s.repo.Insert(ctx, h)
}

// change applies edit to the heartbeat id and writes it, computing its next firing again.
func (s *Service) change(ctx context.Context, projectID, botID, id string, edit func(*Heartbeat) error) (Heartbeat, error) {
	h, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return Heartbeat{}, err
	}
	if err := edit(&h); err != nil {
		return Heartbeat{}, err
	}
	c, err := h.validate()
	if err != nil {
		return Heartbeat{}, err
	}
	now := s.now()
	h.NextRunAt, h.UpdatedAt, h.Rev = s.next(h, c, now), now, h.Rev+1
	return h, s.repo.Replace(ctx, h)
}

// next is h's next firing after now, none when it is not enabled.
func (s *Service) next(h Heartbeat, c Cron, now time.Time) *time.Time {
	if !h.Enabled {
		return nil
	}
	if at := c.Next(now); !at.IsZero() {
		return &at
	}
	return nil
}

// Get returns one heartbeat of the agent.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Heartbeat, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Heartbeat{}, apperr.Invalidf("heartbeat_id", "is required")
	}
	return s.repo.Get(ctx, projectID, botID, id)
}

// List returns one page of the agent's heartbeats.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Heartbeat, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// Enable makes the heartbeat active and enabled again: its errors in a row and the reason it
// stopped are cleared, and it fires at its next scheduled time. The agent's flag must be on.
func (s *Service) Enable(ctx context.Context, projectID string, bot agents.Bot, id string) (Heartbeat, error) {
	if bot.Heartbeat == 0 {
		return Heartbeat{}, heartbeatOff()
	}
	return s.setEnabled(ctx, projectID, bot.ID, id, true)
}

// Disable stops the heartbeat's scheduled firings; a firing under way ends as it would.
func (s *Service) Disable(ctx context.Context, projectID, botID, id string) (Heartbeat, error) {
	return s.setEnabled(ctx, projectID, botID, id, false)
}

func (s *Service) setEnabled(ctx context.Context, projectID, botID, id string, on bool) (Heartbeat, error) {
	return apperr.Reapply(ctx, &s.writes, Resource, strings.TrimSpace(id), func() (Heartbeat, error) {
		return s.change(ctx, projectID, botID, id, func(h *Heartbeat) error {
			h.Enabled = on
			if on {
				h.Status, h.StatusReason, h.ConsecutiveErrors = StatusActive, "", 0
			}
			return nil
		})
	})
}

// Delete removes the heartbeat: it fires no more; a firing under way ends as it would, and its
// chat stays.
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	h, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return err
	}
	return s.repo.Delete(ctx, h, s.now())
}

// Trigger queues a firing of the heartbeat now, enabled or not (budget and the firing under way
// still apply), and returns the firing's id: its logs and its run go by it.
func (s *Service) Trigger(ctx context.Context, projectID string, bot agents.Bot, id string) (string, error) {
	if bot.Heartbeat == 0 {
		return "", heartbeatOff()
	}
	h, err := s.Get(ctx, projectID, bot.ID, id)
	if err != nil {
		return "", err
	}
	at := s.now()
	return FiringID(h.UUID, TriggerManual, at), s.queue.Enqueue(ctx, tasks.NewHeartbeatFireTask(h.UUID, at, true))
}

// Logs is one page of the agent's firings, newest first: of one heartbeat when heartbeatID is
// given (it must be the agent's), else of all.
func (s *Service) Logs(ctx context.Context, projectID, botID, heartbeatID string, page paging.Page) ([]Firing, int, error) {
	if heartbeatID = strings.TrimSpace(heartbeatID); heartbeatID != "" {
		if _, err := s.Get(ctx, projectID, botID, heartbeatID); err != nil {
			return nil, 0, err
		}
	}
	return s.repo.Firings(ctx, projectID, botID, heartbeatID, page)
}

// Summary is the statistics of one heartbeat, or of all of an agent's.
type Summary struct {
	Heartbeats int `json:"heartbeats"`
	Enabled    int `json:"enabled"`
	Stats
	SuccessRate float64 `json:"success_rate"`
	// NextRunAt is the earliest next firing.
	NextRunAt *time.Time `json:"next_run_at"`
}

// StatsOf sums the statistics of the heartbeat id, or of every heartbeat of the agent when id
// is empty. Credits of the period are those of the current month of each heartbeat's zone.
func (s *Service) StatsOf(ctx context.Context, projectID, botID, id string) (Summary, error) {
	var list []Heartbeat
	if id = strings.TrimSpace(id); id != "" {
		h, err := s.Get(ctx, projectID, botID, id)
		if err != nil {
			return Summary{}, err
		}
		list = []Heartbeat{h}
	} else {
		var err error
		if list, err = s.repo.All(ctx, projectID, botID); err != nil {
			return Summary{}, err
		}
	}
	var sum Summary
	now := s.now()
	for _, h := range list {
		sum.Heartbeats++
		if h.Enabled {
			sum.Enabled++
		}
		st := h.Stats
		sum.Runs += st.Runs
		sum.Successes += st.Successes
		sum.Errors += st.Errors
		sum.Skipped += st.Skipped
		sum.ConsecutiveErrors = max(sum.ConsecutiveErrors, st.ConsecutiveErrors)
		sum.CreditsUsed += st.CreditsUsed
		sum.Tokens += st.Tokens
		if st.Period == periodOf(h, now) {
			sum.PeriodCredits += st.PeriodCredits
		}
		sum.Period = periodOf(h, now)
		if st.LastRunAt != nil && (sum.LastRunAt == nil || st.LastRunAt.After(*sum.LastRunAt)) {
			sum.LastRunAt, sum.LastStatus, sum.LastError, sum.LastCredits = st.LastRunAt, st.LastStatus, st.LastError, st.LastCredits
		}
		if h.NextRunAt != nil && (sum.NextRunAt == nil || h.NextRunAt.Before(*sum.NextRunAt)) {
			sum.NextRunAt = h.NextRunAt
		}
	}
	if sum.Runs > 0 {
		sum.SuccessRate = float64(sum.Successes) / float64(sum.Runs)
	}
	return sum, nil
}

// periodOf is the credit period (the calendar month in h's zone) of the moment at.
func periodOf(h Heartbeat, at time.Time) string {
	loc, err := time.LoadLocation(h.Timezone)
	if err != nil {
		loc = time.UTC
	}
	return at.In(loc).Format(firingCreditPeriod)
}

// FiringID is the id of the firing of heartbeat id scheduled at at (or triggered then): also the
// id of its agent run.
func FiringID(id, trigger string, at time.Time) string {
	if trigger == TriggerManual {
		return id + "-m" + strconv.FormatInt(at.UnixMilli(), 10)
	}
	return id + "-" + strconv.FormatInt(at.Unix(), 10)
}
