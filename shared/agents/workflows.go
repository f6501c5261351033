package agents

import (
	"context"
	"slices"

	"github.com/agentplane/agentplane/shared/kit/freeform"
)

// WorkflowState is a workflow as a version of its agent holds it: what decides when it runs,
// and Digest, a hash of its whole definition (name, description, status, is_active, trigger,
// conditions, actions). Revision names the workflow's whole form when it was so, kept in the
// store of workflows' revisions: a versioned agent's published version fires, and a rollback
// restores, its workflows from there.
type WorkflowState struct {
	ID           string `json:"id" bson:"id"`
	Revision     string `json:"revision" bson:"revision"`
	Name         string `json:"name" bson:"name"`
	IsActive     bool   `json:"is_active" bson:"is_active"`
	TriggerType  string `json:"trigger_type" bson:"trigger_type"`
	TriggerEvent string `json:"trigger_event" bson:"trigger_event"`
	Digest       string `json:"digest" bson:"digest"`
}

// Same reports whether a and b are the same workflow defined alike, whatever their revisions.
func (a WorkflowState) Same(b WorkflowState) bool {
	a.Revision, b.Revision = "", ""
	return a == b
}

// workflowChanges are the workflows that differ from old to new, by their ids: each added,
// changed or removed, named "workflows.<its name>".
func workflowChanges(old, new []WorkflowState) []Change {
	var changes []Change
	for _, n := range new {
		i := slices.IndexFunc(old, func(o WorkflowState) bool { return o.ID == n.ID })
		switch {
		case i < 0:
			changes = append(changes, Change{Field: "workflows." + n.Name, New: freeform.Value{V: n}})
		case !old[i].Same(n):
			changes = append(changes, Change{Field: "workflows." + n.Name, Old: freeform.Value{V: old[i]}, New: freeform.Value{V: n}})
		}
	}
	for _, o := range old {
		if !slices.ContainsFunc(new, func(n WorkflowState) bool { return n.ID == o.ID }) {
			changes = append(changes, Change{Field: "workflows." + o.Name, Old: freeform.Value{V: o}})
		}
	}
	return changes
}

// WorkflowSets are agents' workflows as versions record and restore them (shared/workflows
// implements it).
type WorkflowSets interface {
	// Set is the agent's workflows as they are, each one's form kept under its revision.
	Set(ctx context.Context, projectID, botID string) ([]WorkflowState, error)
	// State is the agent's workflow id as it is (false when there is none), its form kept under
	// its revision.
	State(ctx context.Context, projectID, botID, id string) (WorkflowState, bool, error)
	// Restore makes the agent's workflows exactly those of set.
	Restore(ctx context.Context, projectID, botID string, set []WorkflowState) error
}

// UseWorkflows has the versions of agents record their workflows from w, and rollbacks restore
// them.
func (s *Service) UseWorkflows(w WorkflowSets) { s.flows = w }

// WorkflowSet is the set of workflows events trigger for the agent b: its published version's,
// for a versioned agent (a draft's change of a workflow fires nothing until it is published);
// nil for an agent that publishes every change at once, or whose workflows no version recorded,
// whose events trigger its workflows as they are.
func (b Bot) WorkflowSet() []WorkflowState {
	if b.Versioning {
		return b.Workflows
	}
	return nil
}

// ScheduledWorkflows lists the versioned agents whose published workflows hold a schedule
// trigger (their ids, projects and workflows only): the scheduler keeps those workflows' entries
// as the published versions have them.
func (s *Service) ScheduledWorkflows(ctx context.Context) ([]Bot, error) {
	return s.repo.ScheduledWorkflows(ctx)
}

// WorkflowChanged records the agent's workflow workflowID as it is, after a change of it by by
// (created, updated, toggled or deleted): a new version when it differs from the agent's newest
// version's, published at once unless the agent is versioned, as every change of its behaviour.
// A newest version that recorded no workflows records the agent's whole set. Each change
// records its own workflow on the agent's record, so concurrent changes make one version each.
func (s *Service) WorkflowChanged(ctx context.Context, projectID, idOrUUID, by, workflowID string) (Bot, error) {
	return s.change(ctx, projectID, idOrUUID, func(cur, next *Bot) error {
		latest := cur.latest()
		set, err := s.workflowsAfter(ctx, projectID, cur.ID, latest.Config.Workflows, workflowID)
		if err != nil {
			return err
		}
		latest.Config.applyTo(next)
		next.Workflows = set
		versioned(*cur, next, by, s.now(), false)
		return nil
	})
}

// workflowsAfter is set with the agent's workflow id as it is now: replaced, added or removed.
func (s *Service) workflowsAfter(ctx context.Context, projectID, botID string, set []WorkflowState, id string) ([]WorkflowState, error) {
	if set == nil {
		return s.flows.Set(ctx, projectID, botID)
	}
	st, ok, err := s.flows.State(ctx, projectID, botID, id)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(set, func(w WorkflowState) bool { return w.ID == id })
	switch {
	case !ok && i >= 0:
		return slices.Delete(slices.Clone(set), i, i+1), nil
	case !ok:
		return set, nil
	case i >= 0:
		set = slices.Clone(set)
		set[i] = st
		return set, nil
	}
	return append(slices.Clone(set), st), nil
}
