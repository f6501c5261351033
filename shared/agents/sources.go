package agents

import (
	"context"

	"github.com/agentplane/agentplane/shared/memory"
)

// SourceIDs lists agents' memory sources (shared/sources implements it).
type SourceIDs interface {
	// SourceIDs returns the ids of the agent's sources (not deleted), in any order.
	SourceIDs(ctx context.Context, projectID, botID string) ([]string, error)
}

// SourceSets keep the sets of memory sources versions record, each stored once, by agent and
// digest (shared/memory implements it).
type SourceSets interface {
	// Set returns the agent's set ref names.
	Set(ctx context.Context, botID string, ref memory.SetRef) (*memory.Set, error)
	// PutSet stores the set of the agent's sources ids and returns it.
	PutSet(ctx context.Context, projectID, botID string, ids []string) (*memory.Set, error)
}

// UseSources has the versions of agents record their set of memory sources: the agents created
// from then on begin with an empty set, sources' creations and deletions make versions
// (SourcesChanged), and rollbacks restore a version's set.
func (s *Service) UseSources(ids SourceIDs, sets SourceSets) { s.sources, s.sets = ids, sets }

// SourcesChanged makes a new version of the agent, by by, whose set of memory sources is its
// newest version's after c (a newest version that recorded no set starts from the agent's
// sources as they are), published at once unless the agent is versioned, as every change of its
// behaviour.
func (s *Service) SourcesChanged(ctx context.Context, projectID, idOrUUID, by string, c memory.SetChange) error {
	_, err := s.change(ctx, projectID, idOrUUID, func(cur, next *Bot) error {
		latest := cur.latest()
		old, err := s.sourceSet(ctx, projectID, cur.ID, latest.Config.Sources)
		if err != nil {
			return err
		}
		set, err := s.sets.PutSet(ctx, projectID, cur.ID, old.With(c).IDs())
		if err != nil {
			return err
		}
		latest.Config.applyTo(next)
		next.Sources = &set.SetRef
		versioned(*cur, next, by, s.now(), false)
		if next.Latest.Number > latest.Number {
			listSources(next.Latest.Changes, old, set)
		}
		return nil
	})
	return err
}

// sourceSet is the set ref names, or the agent's sources as they are when ref is nil.
func (s *Service) sourceSet(ctx context.Context, projectID, botID string, ref *memory.SetRef) (*memory.Set, error) {
	if ref != nil {
		return s.sets.Set(ctx, botID, *ref)
	}
	ids, err := s.sources.SourceIDs(ctx, projectID, botID)
	if err != nil {
		return nil, err
	}
	return memory.NewSet(ids), nil
}

// listSources lists in the change of the set of sources among changes the ids from older to
// newer added and removed.
func listSources(changes []Change, older, newer *memory.Set) {
	for i := range changes {
		c := &changes[i]
		if c.Field != sourcesField {
			continue
		}
		added, removed := memory.Changed(older, newer)
		c.AddedCount, c.RemovedCount = len(added), len(removed)
		c.Added, c.Removed = added[:min(len(added), MaxListedSources)], removed[:min(len(removed), MaxListedSources)]
	}
}

// listSourcesOf lists in changes, from the version of cfg older to that of newer, the ids of
// sources added and removed, when both recorded a set.
func (s *Service) listSourcesOf(ctx context.Context, b Bot, changes []Change, older, newer Config) error {
	if s.sets == nil || older.Sources == nil || newer.Sources == nil || *older.Sources == *newer.Sources {
		return nil
	}
	o, err := s.sets.Set(ctx, b.ID, *older.Sources)
	if err != nil {
		return err
	}
	n, err := s.sets.Set(ctx, b.ID, *newer.Sources)
	if err != nil {
		return err
	}
	listSources(changes, o, n)
	return nil
}

// restoredSources is the set of sources a rollback to cfg restores: cfg's, less the sources
// deleted since (forgetting is not undone).
func (s *Service) restoredSources(ctx context.Context, b Bot, cfg *Config) error {
	if s.sets == nil || cfg.Sources == nil {
		return nil
	}
	set, err := s.sets.Set(ctx, b.ID, *cfg.Sources)
	if err != nil {
		return err
	}
	ids, err := s.sources.SourceIDs(ctx, b.ProjectID, b.ID)
	if err != nil {
		return err
	}
	live := memory.NewSet(ids)
	if set, err = s.sets.PutSet(ctx, b.ProjectID, b.ID, set.Within(live.Has).IDs()); err != nil {
		return err
	}
	cfg.Sources = &set.SetRef
	return nil
}

// SourcesOf returns the ids of the sources of the agent's version v, in order: at most max,
// and how many there are (-1 when v recorded no set: it answers from all the agent's sources).
func (s *Service) SourcesOf(ctx context.Context, b Bot, v Version, max int) ([]string, int, error) {
	if s.sets == nil || v.Config.Sources == nil {
		return nil, -1, nil
	}
	set, err := s.sets.Set(ctx, b.ID, *v.Config.Sources)
	if err != nil {
		return nil, 0, err
	}
	ids := append([]string{}, set.IDs()...)
	return ids[:min(len(ids), max)], len(ids), nil
}
