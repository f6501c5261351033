package cache

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/memory"
)

// liveKind names the notices of a change of an agent's live list (its id is the agent's).
const liveKind = "memory"

// liveVersion is the version token of an agent's live list as cached, with whose it is.
type liveVersion struct{ bot, v string }

// memoryStore caches the version tokens of agents' live lists: every query of an agent's memory
// (every chat turn) asks for its token, which changes only when one of the agent's sources does.
type memoryStore struct {
	memory.Store
	versions *Cache[string, liveVersion]
}

// MemoryVersions returns store with the version tokens of agents' live lists cached (size
// agents, an agent without a list included, kept at most ttl), so that a query of an agent
// whose memory the process holds makes no store command. A change of an agent's list, which the
// sources' store tells LiveChanged, and the agent's update or deletion drop its token
// everywhere through notices. It is store itself when size is 0.
func MemoryVersions(store memory.Store, notices *Notices, size int, ttl time.Duration) memory.Store {
	if size <= 0 {
		return store
	}
	s := &memoryStore{Store: store, versions: New[string, liveVersion](size, ttl)}
	drop := func(id string) { s.versions.Drop(func(v liveVersion) bool { return v.bot == id }) }
	notices.onChange(liveKind, drop)
	notices.onChange("bot", drop)
	notices.onReconnect(s.versions.Purge)
	return s
}

func (s *memoryStore) LiveVersion(ctx context.Context, botID string) (string, error) {
	v, err := s.versions.Load(ctx, botID, func(ctx context.Context) (liveVersion, error) {
		v, err := s.Store.LiveVersion(ctx, botID)
		return liveVersion{bot: botID, v: v}, err
	})
	return v.v, err
}

// Live keeps the version token the list carries as the agent's: the list read is at least as
// recent as the token beside it.
func (s *memoryStore) Live(ctx context.Context, projectID, botID string) ([]memory.Listed, string, error) {
	var listed []memory.Listed
	v, err := s.versions.Refresh(ctx, botID, func(ctx context.Context) (liveVersion, error) {
		l, v, err := s.Store.Live(ctx, projectID, botID)
		listed = l
		return liveVersion{bot: botID, v: v}, err
	})
	return listed, v.v, err
}

// LiveChanged drops what this process caches of botID's live list, and tells the other
// processes to: the sources' store calls it after every write of an agent's list
// (store.Sources.OnLiveChange).
func (n *Notices) LiveChanged(botID string) { n.Changed(liveKind, botID) }
