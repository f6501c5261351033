package agents

import "context"

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

// workflowChanges are the workflows that differ from old to new, named "workflows.<its name>".
func workflowChanges(old, new []WorkflowState) []Change {
	return setChanges("workflows.", old, new, func(w WorkflowState) (string, string) { return w.ID, w.Name }, WorkflowState.Same)
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

// WorkflowSet is the set of workflows of the version the agent b serves, which its events
// trigger and its runs' run_workflow tool runs: its published version's, for a versioned agent
// (a draft's change of a workflow fires nothing until it is published), or the version's that
// b was taken at (At, ForChat: a request's version, a canary's); nil for an agent that publishes
// every change at once, or whose workflows no version recorded, whose workflows run as they are.
func (b Bot) WorkflowSet() []WorkflowState {
	if b.Versioning || b.serving > 0 {
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
	return s.memberChanged(ctx, projectID, idOrUUID, by, func(cur Bot, latest Config, next *Bot) (err error) {
		next.Workflows, err = setAfter(latest.Workflows, workflowID, func(w WorkflowState) string { return w.ID },
			func() ([]WorkflowState, error) { return s.flows.Set(ctx, projectID, cur.ID) },
			func() (WorkflowState, bool, error) { return s.flows.State(ctx, projectID, cur.ID, workflowID) })
		return err
	})
}
