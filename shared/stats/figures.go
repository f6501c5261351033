package stats

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/chats"
)

// figures gathers one kind of statistics T from the records R they cover.
type figures[R, T any] interface {
	add(R)
	result() T
}

// Bucket is the statistics of one bucket of a series: the records from Start to the next
// bucket's start.
type Bucket[T any] struct {
	Start time.Time `json:"start"`
	Stats T         `json:"stats"`
}

// Report is statistics of the window, in total and, with an interval, by bucket (every bucket
// from the one holding from to the one holding to, empty ones included).
type Report[T any] struct {
	Window
	Stats  T           `json:"stats"`
	Series []Bucket[T] `json:"series,omitempty"`
}

// gather reads the records of w once (read calls its function with each), into the total and
// the buckets (by the time at gives a record) of fresh figures.
func gather[R any, F figures[R, T], T any](w Window, fresh func() F, read func(each func(R) error) error, at func(R) time.Time) (Report[T], error) {
	total, starts := fresh(), w.starts()
	buckets := make([]F, len(starts))
	for i := range buckets {
		buckets[i] = fresh()
	}
	err := read(func(r R) error {
		total.add(r)
		if i, ok := slices.BinarySearchFunc(starts, w.start(at(r)), time.Time.Compare); ok {
			buckets[i].add(r)
		}
		return nil
	})
	if err != nil {
		return Report[T]{}, err
	}
	rep := Report[T]{Window: w, Stats: total.result()}
	for i, b := range buckets {
		rep.Series = append(rep.Series, Bucket[T]{Start: starts[i], Stats: b.result()})
	}
	return rep, nil
}

// messages gathers the figures fresh gives of the agent's messages of w.
func messages[F figures[Fact, T], T any](ctx context.Context, s *Service, projectID, botID string, w Window, fresh func() F) (Report[T], error) {
	return gather(w, fresh, func(each func(Fact) error) error {
		return s.repo.Messages(ctx, projectID, botID, w.From, w.To, each)
	}, func(f Fact) time.Time { return f.CreatedAt })
}

// Totals are the summary's figures: how much was said, by whom, at what cost.
type Totals struct {
	// Chats counts the chats with at least one message in the window.
	Chats    int `json:"chats"`
	Messages int `json:"messages"`
	// UserMessages and AgentMessages count the messages of each role.
	UserMessages  int `json:"user_messages"`
	AgentMessages int `json:"agent_messages"`
	// Users counts the distinct authors of the user messages: a chat's end user when it has
	// one, else the account whose key wrote them.
	Users int `json:"users"`
	// CreditsUsed sums the messages' credit_used; Tokens their tokens; EstimatedCost their
	// estimated_cost (US dollars).
	CreditsUsed   float64 `json:"credits_used"`
	Tokens        int     `json:"tokens"`
	EstimatedCost float64 `json:"estimated_cost"`
}

type totals struct {
	t            Totals
	chats, users map[string]bool
}

func newTotals() *totals { return &totals{chats: map[string]bool{}, users: map[string]bool{}} }

func (s *totals) add(f Fact) {
	s.chats[f.ChatID] = true
	s.t.Messages++
	switch f.Role {
	case chats.RoleUser:
		s.t.UserMessages++
		s.users[f.User] = true
	case chats.RoleAgent:
		s.t.AgentMessages++
	}
	s.t.CreditsUsed += number(f.CreditUsed)
	s.t.Tokens += f.Tokens
	s.t.EstimatedCost += number(f.EstimatedCost)
}

func (s *totals) result() Totals {
	t := s.t
	t.Chats, t.Users = len(s.chats), len(s.users)
	t.CreditsUsed, t.EstimatedCost = round(t.CreditsUsed), round(t.EstimatedCost)
	return t
}

// round keeps 6 decimals of a sum of decimals (what estimated_cost holds), dropping the binary
// noise of adding them as floats.
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// Summary is the agent's chats, messages, users, credits, tokens and estimated cost.
func (s *Service) Summary(ctx context.Context, projectID, botID string, w Window) (Report[Totals], error) {
	return messages(ctx, s, projectID, botID, w, newTotals)
}
