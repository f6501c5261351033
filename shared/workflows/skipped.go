package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/outbox"
)

// MaxSkippedLogs is how many skipped logs a workflow keeps at most: an event whose conditions
// do not hold takes one of that many places by its id, replacing the log there, so a workflow
// that filters out every event keeps a bounded number of them, the latest among them.
const MaxSkippedLogs = 20

// skippedWrite bounds the write of a batch of skipped logs.
const skippedWrite = 10 * time.Second

// skipped is the log of event ev, which did not start w because w's condition i did not hold
// on envelope. Its id is its workflow's and its place's (MaxSkippedLogs).
func (s *Runs) skipped(w Workflow, ev outbox.Event, envelope map[string]any, i int) Run {
	h := fnv.New32a()
	_, _ = h.Write([]byte(ev.ID))
	place := strconv.Itoa(int(h.Sum32() % MaxSkippedLogs))
	now := s.now()
	return Run{UUID: uuid.NewSHA1(runNamespace, []byte(w.UUID+"/skipped/"+place)).String(), ProjectID: w.ProjectID, BotID: w.BotID,
		WorkflowID: w.UUID, Trigger: Trigger{Type: TriggerTypeEvent, EventID: ev.ID, EventType: ev.Type}, Status: RunSkipped,
		Error: unmet(w.Conditions, i, envelope), Actions: []ActionRun{}, CreatedAt: now, EndedAt: &now}
}

// unmet says which condition did not hold and what the event had instead:
// `conditions[0] does not hold: data.value gte 1000; the event's data.value is 500`.
func unmet(conds []Condition, i int, envelope map[string]any) string {
	c := conds[i]
	had := "the event has no " + c.Field
	if v, ok := Lookup(envelope, c.Field); ok {
		had = "the event's " + c.Field + " is " + brief(v)
	}
	return fmt.Sprintf("conditions[%d] does not hold: %s %s %s; %s", i, c.Field, c.Operator, brief(c.Value.V), had)
}

// briefBytes bounds a value as a skipped log shows it.
const briefBytes = 100

// brief is v as JSON, its first briefBytes bytes.
func brief(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(raw) > briefBytes {
		return clipTo(string(raw), briefBytes) + "…"
	}
	return string(raw)
}

// writeSkipped stores a batch of skipped logs in one write; they are logs, so a failure is
// told, not retried.
func (s *Runs) writeSkipped(logs []Run) {
	ctx, cancel := context.WithTimeout(context.Background(), skippedWrite)
	defer cancel()
	if err := s.repo.PutSkipped(ctx, logs); err != nil {
		s.log.Warn("skipped workflow logs not stored", "logs", len(logs), "error", err)
	}
}
