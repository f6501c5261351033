package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// SetRef names a set of an agent's memory sources, as a version of the agent records it: how
// many sources and the digest of their ids (SetDigest). The ids themselves are stored once per
// agent and digest, apart (an agent's sources are unbounded), and never change.
type SetRef struct {
	Count  int    `json:"count" bson:"count"`
	Digest string `json:"digest" bson:"digest"`
}

// SetDigest is the digest of a set of source ids: the hex SHA-256 of the ids, sorted, each
// followed by a newline.
func SetDigest(sorted []string) string {
	h := sha256.New()
	for _, id := range sorted {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Set is a set of an agent's sources whole: its reference and its ids.
type Set struct {
	SetRef
	sorted []string
	has    map[string]struct{}
}

// NewSet is the set of ids (repeats count once).
func NewSet(ids []string) *Set {
	sorted := slices.Compact(slices.Sorted(slices.Values(ids)))
	has := make(map[string]struct{}, len(sorted))
	for _, id := range sorted {
		has[id] = struct{}{}
	}
	return &Set{SetRef: SetRef{Count: len(sorted), Digest: SetDigest(sorted)}, sorted: sorted, has: has}
}

// Has reports whether id is in the set.
func (s *Set) Has(id string) bool {
	_, ok := s.has[id]
	return ok
}

// IDs are the set's ids in order.
func (s *Set) IDs() []string { return slices.Clone(s.sorted) }

// SetChange is a change of a set of sources: Clear empties it, then Add adds ids and Remove
// takes ids out.
type SetChange struct {
	Add    []string
	Remove []string
	Clear  bool
}

// With is the set s after c.
func (s *Set) With(c SetChange) *Set {
	var ids []string
	if !c.Clear {
		ids = s.IDs()
	}
	ids = slices.DeleteFunc(append(ids, c.Add...), func(id string) bool { return slices.Contains(c.Remove, id) })
	return NewSet(ids)
}

// Within is the set of those of s's ids that keep says to keep.
func (s *Set) Within(keep func(id string) bool) *Set {
	return NewSet(slices.DeleteFunc(s.IDs(), func(id string) bool { return !keep(id) }))
}

// Changed are the ids of newer that older lacks (added) and those of older that newer lacks
// (removed), in order.
func Changed(older, newer *Set) (added, removed []string) {
	for _, id := range newer.sorted {
		if !older.Has(id) {
			added = append(added, id)
		}
	}
	for _, id := range older.sorted {
		if !newer.Has(id) {
			removed = append(removed, id)
		}
	}
	return added, removed
}

func (s *Set) bytes() int64 { return int64(len(s.sorted))*80 + 128 }

// setKey is the key of the agent's set digest in the cache.
func setKey(botID, digest string) string { return "set:" + botID + "/" + digest }

// Set returns the agent's set of sources ref names: from the cache, else from the store (sets
// never change, so a cached one cannot go stale). An empty set is read from nowhere.
func (m *Memory) Set(ctx context.Context, botID string, ref SetRef) (*Set, error) {
	if ref.Count == 0 {
		return NewSet(nil), nil
	}
	key := setKey(botID, ref.Digest)
	if s, ok := m.cache.get(key).(*Set); ok {
		return s, nil
	}
	v, err, _ := m.loads.Do(key, func() (any, error) {
		ids, err := m.store.SourceSet(context.WithoutCancel(ctx), botID, ref.Digest)
		if err != nil {
			return nil, err
		}
		s := NewSet(ids)
		m.cache.put(key, s)
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Set), nil
}

// PutSet stores the set of the agent's sources ids (once: a set stored already is left as it
// is), keeps it in the cache and returns it.
func (m *Memory) PutSet(ctx context.Context, projectID, botID string, ids []string) (*Set, error) {
	s := NewSet(ids)
	if s.Count == 0 {
		return s, nil
	}
	if err := m.store.PutSourceSet(ctx, projectID, botID, s.Digest, s.sorted); err != nil {
		return nil, err
	}
	m.cache.put(setKey(botID, s.Digest), s)
	return s, nil
}
