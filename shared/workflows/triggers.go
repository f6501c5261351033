package workflows

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/outbox"
)

// MaxChain is how many workflows an event's chain of causes may hold: a run started by an event
// whose chain is that long does not start (nor does a workflow in the chain already); the
// workflow that would have run is named in the log.
const MaxChain = 5

// OnEvent starts a run of every active workflow of the event's agent that the event triggers
// (for a versioned agent, as its published version has them: see triggered): its
// trigger_event is the event's type and its conditions hold on the event envelope. Of a
// workflow whose conditions do not, it stores a skipped log naming the condition, off the
// event's path (see MaxSkippedLogs). Run ids
// derive from the workflow and the event, so an event delivered twice, or to two consumers,
// starts one run of each workflow. A workflow never runs for an event its own run caused,
// directly or through other workflows, and a chain of workflows stops at MaxChain (the event's
// cause lists the workflows that led to it), saying so in the log.
//
// With hold, the runs it starts are stored held by that lease and returned, for the caller to
// run at once (Executor.Run) rather than leave them to a worker that looks for tasks; their
// tasks are held back until the lease ends, to take them over if the caller does not end
// them. A run stored already (the event delivered again) is queued as any other.
func (s *Runs) OnEvent(ctx context.Context, ev outbox.Event, hold *Lease) ([]Run, error) {
	list, err := s.triggered(ctx, ev)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var envelope map[string]any
	if err := json.Unmarshal(raw, &envelope); err != nil {
		return nil, err
	}
	var held []Run
	for _, w := range list {
		if slices.Contains(ev.Cause, w.UUID) {
			continue
		}
		if i := Failing(w.Conditions, envelope); i >= 0 {
			s.skips.Add(s.skipped(w, ev, envelope, i))
			continue
		}
		if len(ev.Cause) >= MaxChain {
			s.log.Warn("workflow not run: the chain of workflows that led to its trigger is at its limit",
				"workflow_id", w.UUID, "event_id", ev.ID, "event_type", ev.Type, "chain", ev.Cause, "limit", MaxChain)
			continue
		}
		id := uuid.NewSHA1(runNamespace, []byte(w.UUID+"/event/"+ev.ID)).String()
		t := Trigger{Type: TriggerTypeEvent, EventID: ev.ID, EventType: ev.Type}
		r, ours, err := s.start(ctx, w, t, id, string(raw), ev.Cause, hold)
		if err != nil {
			return held, err
		}
		if ours {
			held = append(held, r)
		}
	}
	return held, nil
}

// OnTick starts the run of the schedule workflow w for its tick at: one per workflow and tick,
// however many schedulers fire it.
func (s *Runs) OnTick(ctx context.Context, w Workflow, at time.Time) error {
	at = at.UTC().Truncate(time.Second)
	id := uuid.NewSHA1(runNamespace, []byte(w.UUID+"/tick/"+at.Format(time.RFC3339))).String()
	envelope, err := json.Marshal(map[string]any{"id": id, "type": TriggerTypeSchedule, "project_id": w.ProjectID, "bot_id": w.BotID,
		"occurred_at": at, "workflow_id": w.UUID, "data": map[string]any{"tick": at}})
	if err != nil {
		return err
	}
	_, _, err = s.start(ctx, w, Trigger{Type: TriggerTypeSchedule, Tick: &at}, id, string(envelope), nil, nil)
	return err
}
