package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// State is a tool as a version of its agent holds it: what it is and how the agent uses it,
// its credentials named (Config.Auth.Set, Config.Headers), never given. Revision names the
// tool's whole form when it was so (credentials sealed, operations, document), kept in the
// store of revisions: a version whose tool differs from the tool as it is now is served, and
// rolled back to, from there.
type State struct {
	ID          string   `json:"id" bson:"id"`
	Revision    string   `json:"revision" bson:"revision"`
	Name        string   `json:"name" bson:"name"`
	Type        string   `json:"type" bson:"type"`
	Description string   `json:"description" bson:"description"`
	Config      Config   `json:"config" bson:"config"`
	Settings    Settings `json:"settings" bson:"settings"`
	// Disabled are the operations toggled off.
	Disabled []string `json:"disabled" bson:"disabled"`
}

// StateOf is t as a version holds it.
func StateOf(t Tool) State {
	v := t.view()
	return State{ID: t.ID, Revision: t.Revision, Name: t.Name, Type: t.Type, Description: t.Description, Config: v.Config,
		Settings: v.Settings, Disabled: append([]string{}, t.Disabled...)}
}

// Same reports whether a and b are the same tool configured alike, whatever their revisions.
func (a State) Same(b State) bool {
	a.Revision, b.Revision = "", ""
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// revised is fields, a write of a tool's configuration, with a new revision besides.
func revised(fields map[string]any) map[string]any {
	fields["revision"] = ids.New()
	return fields
}

// Set is the agent's tools as a version holds them, oldest first, each one's form kept in the
// store of revisions (a tool written before revisions were is given its first). It reads the
// store, not a cache: a version records what was written.
func (s *Service) Set(ctx context.Context, projectID, botID string) ([]State, error) {
	list, _, err := s.repo.List(ctx, projectID, botID, "", paging.Page{Page: 1, PerPage: MaxPerAgent})
	if err != nil {
		return nil, err
	}
	for i, t := range list {
		if t.Revision == "" {
			if list[i], err = s.repo.Set(ctx, projectID, botID, t.ID, revised(map[string]any{})); err != nil {
				return nil, err
			}
		}
	}
	if len(list) > 0 {
		if err := s.repo.KeepRevisions(ctx, list...); err != nil {
			return nil, err
		}
	}
	set := make([]State, len(list))
	for i, t := range list {
		set[i] = StateOf(t)
	}
	return set, nil
}

// State is the agent's tool id as a version holds it (false when the agent has no such tool),
// its form kept in the store of revisions. It reads the store, not a cache.
func (s *Service) State(ctx context.Context, projectID, botID, id string) (State, bool, error) {
	t, err := s.repo.Get(ctx, projectID, botID, strings.TrimSpace(id))
	switch {
	case apperr.IsNotFound(err):
		return State{}, false, nil
	case err != nil:
		return State{}, false, err
	case t.Revision == "":
		if t, err = s.repo.Set(ctx, projectID, botID, t.ID, revised(map[string]any{})); err != nil {
			return State{}, false, err
		}
	}
	return StateOf(t), true, s.repo.KeepRevisions(ctx, t)
}

// Restore makes the agent's tools exactly those of set: each as its revision was (recreated
// when it was deleted since), and the tools set lacks deleted. A revision the store lacks is
// a NotFound error, before anything is changed.
func (s *Service) Restore(ctx context.Context, projectID, botID string, set []State) error {
	live, _, err := s.repo.List(ctx, projectID, botID, "", paging.Page{Page: 1, PerPage: MaxPerAgent})
	if err != nil {
		return err
	}
	var restore []Tool
	for _, st := range set {
		if slices.ContainsFunc(live, func(t Tool) bool { return t.ID == st.ID && t.Revision == st.Revision }) {
			continue
		}
		t, err := s.repo.Revision(ctx, projectID, botID, st.Revision)
		if err != nil {
			return err
		}
		restore = append(restore, t)
	}
	for _, t := range live {
		if !slices.ContainsFunc(set, func(st State) bool { return st.ID == t.ID }) {
			if err := s.repo.Delete(ctx, projectID, botID, t.ID); err != nil && !apperr.IsNotFound(err) {
				return err
			}
		}
	}
	for _, t := range restore {
		if err := s.repo.Restore(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// at is the agent's tools as set has them: each tool of live whose revision set names as it
// is, the others from the store of revisions. A nil set (a version made before tools were
// recorded) is live.
func (s *Service) at(ctx context.Context, projectID, botID string, live []Tool, set []State) ([]Tool, error) {
	if set == nil {
		return live, nil
	}
	out := make([]Tool, 0, len(set))
	for _, st := range set {
		if i := slices.IndexFunc(live, func(t Tool) bool { return t.ID == st.ID && t.Revision == st.Revision }); i >= 0 {
			out = append(out, live[i])
			continue
		}
		t, err := s.repo.Revision(ctx, projectID, botID, st.Revision)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
