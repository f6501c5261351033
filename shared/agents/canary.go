package agents

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Canary sends a share of the agent's new chats to a candidate version: a chat whose id hashes
// below Share begins on Version, the others on the published version.
type Canary struct {
	Version int     `json:"version" bson:"version"`
	Share   float64 `json:"share" bson:"share"`
	// Config is the candidate's behaviour, kept with the agent so that a chat on it reads no
	// version from the store.
	Config *Config `json:"-" bson:"config,omitempty"`
}

// clone is c sharing no slice with it.
func (c *Canary) clone() *Canary {
	if c == nil {
		return nil
	}
	out := *c
	if c.Config != nil {
		cfg := c.Config.clone()
		out.Config = &cfg
	}
	return &out
}

// canaryOf checks the canary an update sets on next (a version of next, a share strictly between
// 0 and 1) and gives it the version's behaviour; a canary naming no version removes it.
func (s *Service) canaryOf(ctx context.Context, next *Bot, set *Canary) error {
	if set.Version == 0 {
		next.Canary = nil
		return nil
	}
	if set.Share <= 0 || set.Share >= 1 {
		return apperr.Invalidf("canary.share", "must be greater than 0 and less than 1")
	}
	if set.Version < 1 || set.Version > next.latest().Number {
		return apperr.Invalidf("canary.version", "must be a version of the agent, 1 to %d", next.latest().Number)
	}
	v, err := s.stored(ctx, *next, set.Version)
	if err != nil {
		return err
	}
	next.Canary = &Canary{Version: set.Version, Share: set.Share, Config: &v.Config}
	return nil
}

// InShare reports whether id (a chat's, for the canary; a message's, for online grading) falls
// in share: the SHA-256 hash of the id, as a fraction of 1, is below share. The same id always
// falls the same way.
func InShare(id string, share float64) bool {
	sum := sha256.Sum256([]byte(strings.TrimSpace(id)))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11)/(1<<53) < share
}

// ForChat is the agent as the chat chatID gets it when the request named no version: on (the
// version the chat began with; 0 for a new chat) while it is the published version or the
// canary's, else, for a new chat, the canary's version when the chat falls in its share
// (InShare), else the published version. A chat on a canary that ended, or on a version no
// longer published, goes on with the published version. An agent a request gave a version
// (At) keeps it.
func (b Bot) ForChat(chatID string, on int, isNew bool) Bot {
	c := b.Canary
	if b.serving > 0 || c == nil || c.Config == nil || c.Version == b.Serving() {
		return b
	}
	if (isNew && InShare(chatID, c.Share)) || (!isNew && on == c.Version) {
		return b.on(c.Version, *c.Config)
	}
	return b
}

// on is the agent with the behaviour cfg of its version n, which it then serves.
func (b Bot) on(n int, cfg Config) Bot {
	at := b.clone()
	cfg.applyTo(&at)
	at.serving = n
	return at
}
