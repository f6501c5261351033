package stats

import (
	"context"
	"math"
	"slices"
	"strconv"
	"time"
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

// hours gathers the figures fresh gives of the agent's hours that overlap w (the hour holding
// From to the one holding To).
func hours[F figures[Hourly, T], T any](ctx context.Context, s *Service, projectID, botID string, w Window, fresh func() F) (Report[T], error) {
	return gather(w, fresh, func(each func(Hourly) error) error {
		from, to := w.hours()
		return s.repo.Hours(ctx, projectID, botID, from, to, each)
	}, func(h Hourly) time.Time { return h.Start })
}

// Totals are the summary's figures: how much was said, by whom, at what cost.
type Totals struct {
	// Chats counts the chats with at least one message in the window.
	Chats    int `json:"chats"`
	Messages int `json:"messages"`
	// UserMessages and AgentMessages count the messages of each role.
	UserMessages  int `json:"user_messages"`
	AgentMessages int `json:"agent_messages"`
	// Users counts the distinct authors of the user messages: the end user who wrote one on
	// the agent's page or widget, else the account whose key sent it.
	Users int `json:"users"`
	// CreditsUsed sums the messages' credit_used; Tokens their tokens; EstimatedCost their
	// estimated_cost (US dollars).
	CreditsUsed   float64 `json:"credits_used"`
	Tokens        int     `json:"tokens"`
	EstimatedCost float64 `json:"estimated_cost"`
	// Versions are the agent's answers by the version that wrote them (its number in decimal),
	// with their votes: how a canary compares with the published version.
	Versions map[string]VersionTotals `json:"versions"`
}

// VersionTotals are the answers of one version of the agent and their votes.
type VersionTotals struct {
	AgentMessages int     `json:"agent_messages"`
	Tokens        int     `json:"tokens"`
	CreditsUsed   float64 `json:"credits_used"`
	EstimatedCost float64 `json:"estimated_cost"`
	// AvgReplyMS is the answers' average estimated_time_ms.
	AvgReplyMS float64 `json:"avg_reply_ms"`
	Upvotes    int     `json:"upvotes"`
	Downvotes  int     `json:"downvotes"`
	replyMS    int64
}

type totals struct {
	t            Totals
	chats, users map[string]bool
}

func newTotals() *totals {
	return &totals{t: Totals{Versions: map[string]VersionTotals{}}, chats: map[string]bool{}, users: map[string]bool{}}
}

func (s *totals) add(h Hourly) {
	for c := range h.Chats {
		s.chats[c] = true
	}
	for u := range h.Authors {
		s.users[u] = true
	}
	s.t.Messages += h.Messages
	s.t.UserMessages += h.UserMessages
	s.t.AgentMessages += h.AgentMessages
	s.t.CreditsUsed += h.Credits
	s.t.Tokens += h.Tokens
	s.t.EstimatedCost += h.Cost
	for n, vh := range h.Versions {
		v := s.t.Versions[n]
		v.AgentMessages += vh.AgentMessages
		v.Tokens += vh.Tokens
		v.CreditsUsed += vh.Credits
		v.EstimatedCost += vh.Cost
		v.replyMS += vh.ReplyMS
		s.t.Versions[n] = v
	}
	for _, vote := range h.Voted {
		if vote.Version > 0 {
			n := strconv.Itoa(vote.Version)
			v := s.t.Versions[n]
			v.Upvotes += vote.Upvotes
			v.Downvotes += vote.Downvotes
			s.t.Versions[n] = v
		}
	}
}

func (s *totals) result() Totals {
	t := s.t
	t.Chats, t.Users = len(s.chats), len(s.users)
	t.CreditsUsed, t.EstimatedCost = round(t.CreditsUsed), round(t.EstimatedCost)
	t.Versions = make(map[string]VersionTotals, len(s.t.Versions))
	for n, v := range s.t.Versions {
		v.CreditsUsed, v.EstimatedCost = round(v.CreditsUsed), round(v.EstimatedCost)
		if v.AgentMessages > 0 {
			v.AvgReplyMS = round(float64(v.replyMS) / float64(v.AgentMessages))
		}
		t.Versions[n] = v
	}
	return t
}

// round keeps 6 decimals of a sum of decimals (what estimated_cost holds), dropping the binary
// noise of adding them as floats.
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// Summary is the agent's chats, messages, users, credits, tokens and estimated cost.
func (s *Service) Summary(ctx context.Context, projectID, botID string, w Window) (Report[Totals], error) {
	return hours(ctx, s, projectID, botID, w, newTotals)
}
