package stats

import (
	"cmp"
	"context"
	"time"
)

// Handoff is a chat's handoff to a person, as the statistics read it.
type Handoff struct {
	Source       string
	RequestedAt  time.Time
	FirstReplyAt *time.Time
}

// Handoffs are the chats handed to people in the window: how many, by what asked (source),
// the share of the window's chats they are, and how long the first human reply took.
type Handoffs struct {
	Handoffs int            `json:"handoffs"`
	BySource map[string]int `json:"by_source"`
	// Replied counts the handoffs a person answered; FirstReplyMS is the distribution of the
	// time from the request to that first answer.
	Replied      int     `json:"replied"`
	FirstReplyMS Latency `json:"first_reply_ms"`
	// Share is the handoffs over the chats with a message in the window (0 without chats).
	Share float64 `json:"share"`
}

type handoffFigures struct {
	h     Handoffs
	times []float64
}

func newHandoffFigures() *handoffFigures {
	return &handoffFigures{h: Handoffs{BySource: map[string]int{}}}
}

func (s *handoffFigures) add(h Handoff) {
	s.h.Handoffs++
	s.h.BySource[h.Source]++
	if h.FirstReplyAt != nil {
		s.h.Replied++
		s.times = append(s.times, float64(h.FirstReplyAt.Sub(h.RequestedAt).Milliseconds()))
	}
}

func (s *handoffFigures) result() Handoffs {
	h := s.h
	h.FirstReplyMS = latencyOf(s.times)
	return h
}

// Handoffs are the agent's chats handed to people in w, by source, with the time to the first
// human reply; the share of the window's chats is given for the whole window.
func (s *Service) Handoffs(ctx context.Context, projectID, botID string, w Window) (Report[Handoffs], error) {
	rep, err := gather(w, newHandoffFigures, func(each func(Handoff) error) error {
		return s.repo.Handoffs(ctx, projectID, botID, w.From, w.To, each)
	}, func(h Handoff) time.Time { return h.RequestedAt })
	if err != nil {
		return rep, err
	}
	chats, err := s.Summary(ctx, projectID, botID, w)
	if err != nil {
		return rep, err
	}
	if n := chats.Stats.Chats; n > 0 {
		rep.Stats.Share = float64(rep.Stats.Handoffs) / float64(cmp.Or(n, 1))
	}
	return rep, nil
}
