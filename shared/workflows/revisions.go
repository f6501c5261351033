package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
)

// revisionNamespace derives the revision of a workflow written before revisions were from its
// id and its write's number, so every process names that form alike.
var revisionNamespace = uuid.MustParse("5b0e6a2d-8c1f-4e7a-9d3b-2f4c6e8a0b1d")

// revision names w's whole form: the revision its write gave it, or for a workflow written
// before revisions were, one derived from its id and Rev (each write bumps Rev).
func (w Workflow) revision() string {
	if w.Revision != "" {
		return w.Revision
	}
	return uuid.NewSHA1(revisionNamespace, []byte(w.UUID+"/"+strconv.FormatInt(w.Rev, 10))).String()
}

// StateOf is w as a version of its agent holds it.
func StateOf(w Workflow) agents.WorkflowState {
	return agents.WorkflowState{ID: w.UUID, Revision: w.revision(), Name: w.Name, IsActive: w.IsActive,
		TriggerType: w.TriggerType, TriggerEvent: w.TriggerEvent, Digest: digest(w)}
}

// digest is a hash of w's definition as its user wrote it: every field but its id, agent,
// times and revisions.
func digest(w Workflow) string {
	raw, _ := json.Marshal(struct {
		Name, Description, Status string
		IsActive                  bool
		Definition                Definition
	}{w.Name, w.Description, w.Status, w.IsActive, w.Definition})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// Set is the agent's workflows as a version holds them, oldest first, each one's form kept in
// the store of revisions. It reads the store, not a cache: a version records what was written.
func (s *Service) Set(ctx context.Context, projectID, botID string) ([]agents.WorkflowState, error) {
	list, err := s.repo.All(ctx, projectID, botID)
	if err != nil {
		return nil, err
	}
	if err := s.keep(ctx, list...); err != nil {
		return nil, err
	}
	set := make([]agents.WorkflowState, len(list))
	for i, w := range list {
		set[i] = StateOf(w)
	}
	return set, nil
}

// State is the agent's workflow id as a version holds it (false when the agent has no such
// workflow), its form kept in the store of revisions. It reads the store, not a cache.
func (s *Service) State(ctx context.Context, projectID, botID, id string) (agents.WorkflowState, bool, error) {
	w, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(id))
	switch {
	case apperr.IsNotFound(err):
		return agents.WorkflowState{}, false, nil
	case err != nil:
		return agents.WorkflowState{}, false, err
	}
	return StateOf(w), true, s.keep(ctx, w)
}

// keep keeps each workflow's form under its revision.
func (s *Service) keep(ctx context.Context, list ...Workflow) error {
	if len(list) == 0 {
		return nil
	}
	forms := make([]Workflow, len(list))
	for i, w := range list {
		w.Revision = w.revision()
		forms[i] = w
	}
	return s.repo.KeepRevisions(ctx, forms...)
}

// Restore makes the agent's workflows exactly those of set: each as its revision was (made
// again when it was deleted since), and the workflows set lacks deleted; each write carries its
// event, as a change through the API does. A revision the store lacks is a NotFound error,
// before anything is changed.
func (s *Service) Restore(ctx context.Context, projectID, botID string, set []agents.WorkflowState) error {
	live, err := s.repo.All(ctx, projectID, botID)
	if err != nil {
		return err
	}
	var restore []Workflow
	for _, st := range set {
		if slices.ContainsFunc(live, func(w Workflow) bool { return w.UUID == st.ID && w.revision() == st.Revision }) {
			continue
		}
		w, err := s.repo.Revision(ctx, projectID, botID, st.Revision)
		if err != nil {
			return err
		}
		restore = append(restore, w)
	}
	for _, w := range live {
		if !slices.ContainsFunc(set, func(st agents.WorkflowState) bool { return st.ID == w.UUID }) {
			if err := s.remove(ctx, w); err != nil && !apperr.IsNotFound(err) {
				return err
			}
		}
	}
	for _, w := range restore {
		typ := outbox.WorkflowUpdated
		if !slices.ContainsFunc(live, func(l Workflow) bool { return l.UUID == w.UUID }) {
			typ = outbox.WorkflowCreated
		}
		w.UpdatedAt = s.now()
		ev := workflowEvents.New(ctx, typ, projectID, botID, w)
		if err := s.repo.Restore(ctx, w, ev); err != nil {
			return err
		}
		s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: w.UUID}, ev)
	}
	return nil
}

// triggered are the workflows of the event's agent that events of its type trigger: for a
// versioned agent, those of its published version, each as its revision has it (a draft's
// workflow, added or changed, fires nothing until it is published; one the draft deactivated or
// deleted fires until then); for any other agent, its active workflows as they are. The agent is
// read through the agents' cache and the revisions, which never change, through theirs: an
// event reads the store for neither once they are warm.
func (s *Runs) triggered(ctx context.Context, ev outbox.Event) ([]Workflow, error) {
	set, err := s.published(ctx, ev.ProjectID, ev.BotID)
	if err != nil {
		return nil, err
	}
	if set == nil {
		return s.workflows.repo.Triggered(ctx, ev.ProjectID, ev.BotID, ev.Type)
	}
	var list []Workflow
	for _, st := range set {
		if !st.IsActive || st.TriggerType != TriggerTypeEvent || st.TriggerEvent != ev.Type {
			continue
		}
		w, err := s.workflows.repo.Revision(ctx, ev.ProjectID, ev.BotID, st.Revision)
		switch {
		case apperr.IsNotFound(err):
			s.log.Warn("workflow not run: its published revision is not kept", "workflow_id", st.ID, "revision", st.Revision)
			continue
		case err != nil:
			return nil, err
		}
		list = append(list, w)
	}
	return list, nil
}

// published is the workflows of the versioned agent botID as its published version has them;
// nil for an agent that publishes every change at once (or has none recorded, or is gone).
func (s *Runs) published(ctx context.Context, projectID, botID string) ([]agents.WorkflowState, error) {
	if s.bots == nil || botID == "" {
		return nil, nil
	}
	b, err := s.bots.Get(ctx, projectID, botID)
	if apperr.IsNotFound(err) {
		return nil, nil
	}
	return b.WorkflowSet(), err
}

// Agents are what the triggers need of agents: each one (a cached read) and the versioned ones
// with schedules (shared/agents implements it).
type Agents interface {
	Bots
	// ScheduledWorkflows lists the versioned agents whose published workflows hold a schedule
	// trigger.
	ScheduledWorkflows(ctx context.Context) ([]agents.Bot, error)
}

// UseAgents has events and schedules trigger versioned agents' workflows as their published
// versions have them.
func (s *Runs) UseAgents(a Agents) { s.bots = a }

// scheduled are the schedule workflows to keep entries for: the active ones as they are, but,
// for a versioned agent, those its published version holds active, as their revisions have them
// (a draft's new, changed, deactivated or deleted schedule changes nothing until it is
// published).
func (s *Runs) scheduled(ctx context.Context) ([]Workflow, error) {
	live, err := s.workflows.repo.Scheduled(ctx)
	if err != nil || s.bots == nil {
		return live, err
	}
	var list []Workflow
	for _, w := range live {
		set, err := s.published(ctx, w.ProjectID, w.BotID)
		if err != nil {
			return nil, err
		}
		if set == nil {
			list = append(list, w)
		}
	}
	versioned, err := s.bots.ScheduledWorkflows(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range versioned {
		for _, st := range b.WorkflowSet() {
			if !st.IsActive || st.TriggerType != TriggerTypeSchedule {
				continue
			}
			w, err := s.workflows.repo.Revision(ctx, b.ProjectID, b.ID, st.Revision)
			switch {
			case apperr.IsNotFound(err):
				s.log.Warn("schedule not kept: its published revision is not kept", "workflow_id", st.ID, "revision", st.Revision)
				continue
			case err != nil:
				return nil, err
			}
			list = append(list, w)
		}
	}
	return list, nil
}
